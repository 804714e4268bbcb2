<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * A value that does not fit its Avro schema: $path is the JSON pointer of
 * the offending field ("" for the value itself), $reason what is wrong.
 */
final class AvroException extends KafkaException
{
    public function __construct(public readonly string $path, public readonly string $reason)
    {
        parent::__construct(($path === '' ? '' : "$path: ") . $reason);
    }
}
