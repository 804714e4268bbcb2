<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * Kafka's key partitioner: murmur2 exactly as the Java client's
 * org.apache.kafka.common.utils.Utils.murmur2 (seed 0x9747b28c), and
 * partition = toPositive(murmur2(key)) % numPartitions, so a keyed record
 * lands on the partition Java, franz-go (StickyKeyPartitioner) and
 * librdkafka's murmur2_random choose for the same key.
 *
 * PHP integers are 64 bits: every value is kept in 0 .. 2^32-1 and the
 * 32-bit multiplications are split so that no product overflows.
 */
final class Murmur2
{
    private const M = 0x5bd1e995;

    /** murmur2 of $key as an unsigned 32-bit integer (Java's int, bit for bit). */
    public static function hash(string $key): int
    {
        $len = strlen($key);
        $h = (0x9747b28c ^ $len) & 0xffffffff;
        $blocks = $len >> 2;
        if ($blocks > 0) {
            $words = unpack('V' . $blocks, $key);
            foreach ($words as $k) {
                $k = self::mul($k, self::M);
                $k ^= $k >> 24;
                $k = self::mul($k, self::M);
                $h = self::mul($h, self::M) ^ $k;
            }
        }
        $tail = $len & ~3;
        switch ($len & 3) {
            case 3:
                $h ^= ord($key[$tail + 2]) << 16;
                // no break
            case 2:
                $h ^= ord($key[$tail + 1]) << 8;
                // no break
            case 1:
                $h ^= ord($key[$tail]);
                $h = self::mul($h, self::M);
        }
        $h ^= $h >> 13;
        $h = self::mul($h, self::M);
        $h ^= $h >> 15;
        return $h;
    }

    /** The partition of a keyed record among $numPartitions. */
    public static function partition(string $key, int $numPartitions): int
    {
        return (self::hash($key) & 0x7fffffff) % $numPartitions;
    }

    /** $a * $b mod 2^32, for $a, $b in 0 .. 2^32-1. */
    private static function mul(int $a, int $b): int
    {
        return (($a * ($b & 0xffff)) + ((($a * ($b >> 16)) & 0xffff) << 16)) & 0xffffffff;
    }
}
