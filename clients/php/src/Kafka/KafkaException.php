<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * A failure of the Kafka transport. Producer methods never let it reach the
 * caller unless the 'throw' option is true; AvroSerializer::serialize throws
 * it (its subclass AvroException) for a value that does not fit the schema.
 */
class KafkaException extends \RuntimeException
{
    /**
     * @param int $kafkaCode Kafka's error code when a broker answered one, else -1.
     * @param bool $retriable Whether fresh metadata and a second try may succeed.
     */
    public function __construct(
        string $message,
        public readonly int $kafkaCode = -1,
        public readonly bool $retriable = false,
        ?\Throwable $previous = null,
    ) {
        parent::__construct($message, 0, $previous);
    }
}
