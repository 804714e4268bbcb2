<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * RecordBatch v2 (magic 2), the only record format of Produce v3 and
 * later: uncompressed, CreateTime timestamps, no producer id (not
 * idempotent), CRC-32C over everything after the crc field.
 *
 * @internal
 */
final class RecordBatch
{
    /**
     * Encodes records (value, key or null, headers as a list of [name,
     * value or null]) as one batch stamped $timestampMs.
     *
     * @param list<array{0: string, 1: ?string, 2: list<array{0: string, 1: ?string}>}> $records
     */
    public static function encode(array $records, int $timestampMs): string
    {
        $body = '';
        foreach (array_values($records) as $i => [$value, $key, $headers]) {
            $r = "\x00"                 // attributes
                . "\x00"                // timestampDelta 0 (varlong)
                . Wire::varint($i)      // offsetDelta
                . ($key === null ? "\x01" : Wire::varint(strlen($key)) . $key)
                . Wire::varint(strlen($value)) . $value
                . Wire::varint(count($headers));
            foreach ($headers as [$name, $hv]) {
                $r .= Wire::varint(strlen($name)) . $name . ($hv === null ? "\x01" : Wire::varint(strlen($hv)) . $hv);
            }
            $body .= Wire::varint(strlen($r)) . $r;
        }
        $n = count($records);
        $afterCrc = Wire::int16(0)          // attributes: no compression, CreateTime
            . Wire::int32($n - 1)           // lastOffsetDelta
            . Wire::int64($timestampMs)     // baseTimestamp
            . Wire::int64($timestampMs)     // maxTimestamp
            . Wire::int64(-1)               // producerId
            . Wire::int16(-1)               // producerEpoch
            . Wire::int32(-1)               // baseSequence
            . Wire::int32($n)
            . $body;
        $afterLength = Wire::int32(-1)      // partitionLeaderEpoch
            . "\x02"                        // magic
            . pack('N', Crc32c::checksum($afterCrc))
            . $afterCrc;
        return Wire::int64(0) . Wire::int32(strlen($afterLength)) . $afterLength;
    }

    /**
     * Decodes one batch written by encode() (the client's tests): the
     * records as [value, key, headers, offsetDelta] and the batch's fields.
     *
     * @return array{crcOk: bool, magic: int, timestamp: int, records: list<array{0: ?string, 1: ?string, 2: list<array{0: string, 1: ?string}>, 3: int}>}
     */
    public static function decode(string $batch): array
    {
        $r = new Reader($batch);
        $r->int64();
        $len = $r->int32();
        $r->int32();
        $magic = $r->int8();
        $crc = $r->int32() & 0xffffffff;
        $afterCrc = substr($batch, 8 + 4 + 4 + 1 + 4, $len - 9);
        $r->int16();
        $r->int32();
        $ts = $r->int64();
        $r->int64();
        $r->int64();
        $r->int16();
        $r->int32();
        $n = $r->int32();
        $records = [];
        for ($i = 0; $i < $n; $i++) {
            $r->varint();
            $r->int8();
            $r->varint();
            $delta = $r->varint();
            $key = $r->raw($r->varint());
            $value = $r->raw($r->varint());
            $headers = [];
            for ($h = $r->varint(); $h > 0; $h--) {
                $name = (string) $r->raw($r->varint());
                $headers[] = [$name, $r->raw($r->varint())];
            }
            $records[] = [$value, $key, $headers, $delta];
        }
        return ['crcOk' => Crc32c::compute($afterCrc) === $crc, 'magic' => $magic, 'timestamp' => $ts, 'records' => $records];
    }
}
