<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * Names of the Kafka error codes a producer meets, and which of them fresh
 * metadata and a second try may cure.
 *
 * @internal
 */
final class Errors
{
    private const NAMES = [
        -1 => 'UNKNOWN_SERVER_ERROR', 1 => 'OFFSET_OUT_OF_RANGE', 2 => 'CORRUPT_MESSAGE', 3 => 'UNKNOWN_TOPIC_OR_PARTITION',
        4 => 'INVALID_FETCH_SIZE', 5 => 'LEADER_NOT_AVAILABLE', 6 => 'NOT_LEADER_OR_FOLLOWER', 7 => 'REQUEST_TIMED_OUT',
        10 => 'MESSAGE_TOO_LARGE', 13 => 'NETWORK_EXCEPTION', 17 => 'INVALID_TOPIC_EXCEPTION', 18 => 'RECORD_LIST_TOO_LARGE',
        19 => 'NOT_ENOUGH_REPLICAS', 20 => 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', 21 => 'INVALID_REQUIRED_ACKS',
        29 => 'TOPIC_AUTHORIZATION_FAILED', 31 => 'CLUSTER_AUTHORIZATION_FAILED', 33 => 'UNSUPPORTED_SASL_MECHANISM',
        34 => 'ILLEGAL_SASL_STATE', 35 => 'UNSUPPORTED_VERSION', 42 => 'INVALID_REQUEST', 43 => 'UNSUPPORTED_FOR_MESSAGE_FORMAT',
        56 => 'KAFKA_STORAGE_ERROR', 58 => 'SASL_AUTHENTICATION_FAILED', 74 => 'FENCED_LEADER_EPOCH',
        75 => 'UNKNOWN_LEADER_EPOCH', 87 => 'INVALID_RECORD', 89 => 'THROTTLING_QUOTA_EXCEEDED',
    ];

    /**
     * Errors after which fresh metadata and a second try may succeed. Most
     * mean the record was not written; after REQUEST_TIMED_OUT (7) and
     * NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) it may have been, and a second
     * try can write it twice.
     */
    private const RETRIABLE = [3, 5, 6, 7, 13, 19, 20, 56, 74, 75];

    public static function name(int $code): string
    {
        return (self::NAMES[$code] ?? 'error') . " ($code)";
    }

    public static function retriable(int $code): bool
    {
        return in_array($code, self::RETRIABLE, true);
    }
}
