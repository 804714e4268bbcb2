<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * Encoders of the Kafka protocol's primitive types (big-endian integers,
 * int16-length strings, int32-length bytes and arrays) and of the
 * zigzag varints of RecordBatch v2 records. Pure functions on strings.
 *
 * @internal
 */
final class Wire
{
    public static function int8(int $v): string
    {
        return chr($v & 0xff);
    }

    public static function int16(int $v): string
    {
        return pack('n', $v & 0xffff);
    }

    public static function int32(int $v): string
    {
        return pack('N', $v & 0xffffffff);
    }

    public static function int64(int $v): string
    {
        return pack('J', $v);
    }

    /** A STRING (int16 length), or a NULLABLE_STRING's null (-1). */
    public static function string(?string $s): string
    {
        if ($s === null) {
            return "\xff\xff";
        }
        if (strlen($s) > 0x7fff) {
            throw new KafkaException('string of ' . strlen($s) . ' bytes is too long for the protocol');
        }
        return pack('n', strlen($s)) . $s;
    }

    /** BYTES (int32 length), or NULLABLE_BYTES' null (-1). */
    public static function bytes(?string $b): string
    {
        return $b === null ? "\xff\xff\xff\xff" : pack('N', strlen($b)) . $b;
    }

    /**
     * An ARRAY of already encoded items.
     *
     * @param list<string> $items
     */
    public static function array(array $items): string
    {
        return pack('N', count($items)) . implode('', $items);
    }

    /** An ARRAY of STRINGs. */
    public static function stringArray(array $strings): string
    {
        return self::array(array_map([self::class, 'string'], array_values($strings)));
    }

    /** A zigzag-encoded signed varint (VARINT and VARLONG of records). */
    public static function varint(int $v): string
    {
        return self::uvarint(($v << 1) ^ ($v >> 63));
    }

    /** An unsigned varint of the 64 bits of $v. */
    public static function uvarint(int $v): string
    {
        $out = '';
        while (($v & ~0x7f) !== 0) {
            $out .= chr(($v & 0x7f) | 0x80);
            $v = ($v >> 7) & 0x01ffffffffffffff; // logical shift
        }
        return $out . chr($v);
    }
}
