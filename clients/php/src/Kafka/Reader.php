<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * Reads the Kafka protocol's primitive types from a response body; a body
 * shorter than what it must hold is a KafkaException, never a PHP warning.
 *
 * @internal
 */
final class Reader
{
    public function __construct(private string $buf, private int $pos = 0)
    {
    }

    private function take(int $n): string
    {
        if ($n < 0 || $this->pos + $n > strlen($this->buf)) {
            throw new KafkaException('malformed response: truncated at byte ' . $this->pos);
        }
        $s = substr($this->buf, $this->pos, $n);
        $this->pos += $n;
        return $s;
    }

    public function int8(): int
    {
        $v = ord($this->take(1));
        return $v >= 0x80 ? $v - 0x100 : $v;
    }

    public function int16(): int
    {
        $v = unpack('n', $this->take(2))[1];
        return $v >= 0x8000 ? $v - 0x10000 : $v;
    }

    public function int32(): int
    {
        $v = unpack('N', $this->take(4))[1];
        return $v >= 0x80000000 ? $v - 0x100000000 : $v;
    }

    public function int64(): int
    {
        return unpack('J', $this->take(8))[1];
    }

    public function string(): string
    {
        return $this->nullableString() ?? '';
    }

    public function nullableString(): ?string
    {
        $n = $this->int16();
        return $n < 0 ? null : $this->take($n);
    }

    public function bytes(): ?string
    {
        $n = $this->int32();
        return $n < 0 ? null : $this->take($n);
    }

    /** The length of an ARRAY (0 for a null array). */
    public function arrayLength(): int
    {
        $n = $this->int32();
        if ($n > strlen($this->buf) - $this->pos) {
            throw new KafkaException("malformed response: array of $n items at byte {$this->pos}");
        }
        return max(0, $n);
    }

    /** @return list<int> */
    public function int32Array(): array
    {
        $out = [];
        for ($i = $this->arrayLength(); $i > 0; $i--) {
            $out[] = $this->int32();
        }
        return $out;
    }

    /** A zigzag varint (records). */
    public function varint(): int
    {
        $u = 0;
        $shift = 0;
        do {
            if ($shift > 63) {
                throw new KafkaException('malformed varint');
            }
            $b = ord($this->take(1));
            $u |= ($b & 0x7f) << $shift;
            $shift += 7;
        } while ($b & 0x80);
        return (($u >> 1) & PHP_INT_MAX) ^ -($u & 1);
    }

    /** Bytes of the given length (records' keys and values; -1 is null). */
    public function raw(int $n): ?string
    {
        return $n < 0 ? null : $this->take($n);
    }

    public function remaining(): int
    {
        return strlen($this->buf) - $this->pos;
    }
}
