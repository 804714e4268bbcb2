<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
 * RecordBatch v2. compute() is the table-driven algorithm in PHP;
 * checksum() uses PHP's built-in hash('crc32c') when the hash extension
 * has it (PHP 7.4 and later), which gives the same value faster.
 *
 * @internal
 */
final class Crc32c
{
    /** @var list<int>|null */
    private static ?array $table = null;

    private static ?bool $native = null;

    /** The CRC-32C of $data as an unsigned 32-bit integer. */
    public static function checksum(string $data): int
    {
        self::$native ??= in_array('crc32c', hash_algos(), true);
        if (self::$native) {
            return unpack('N', hash('crc32c', $data, true))[1];
        }
        return self::compute($data);
    }

    /** The CRC-32C of $data, computed with a 256-entry table in PHP. */
    public static function compute(string $data): int
    {
        $t = self::$table ??= self::table();
        $crc = 0xffffffff;
        $n = strlen($data);
        for ($i = 0; $i < $n; $i++) {
            $crc = $t[($crc ^ ord($data[$i])) & 0xff] ^ ($crc >> 8);
        }
        return $crc ^ 0xffffffff;
    }

    /** @return list<int> */
    private static function table(): array
    {
        $t = [];
        for ($i = 0; $i < 256; $i++) {
            $c = $i;
            for ($k = 0; $k < 8; $k++) {
                $c = ($c & 1) ? (($c >> 1) ^ 0x82f63b78) : ($c >> 1);
            }
            $t[] = $c;
        }
        return $t;
    }
}
