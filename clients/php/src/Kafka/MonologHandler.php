<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * The body of EventLogging\Kafka\MonologHandler: a Monolog 2/3 handler
 * (the shape of AbstractProcessingHandler, Monolog not required) that
 * writes each log record's context as one Kafka record — Avro in the
 * Confluent wire format when the record's channel has a subject, JSON
 * otherwise — and produces everything a request logged with ONE sendMany
 * when the handler is closed (Monolog's close(), the handler's
 * destructor, or the end of the request).
 *
 *     $log->pushHandler(new EventLogging\Kafka\MonologHandler([
 *         'brokers' => ['kafka1:9092'],
 *         'topics' => ['billing' => 'app_billing', 'search' => 'app_search'],
 *         'subjects' => ['billing' => 'app_billing-value'],          // Avro for this channel
 *         'registry' => 'http://localhost:8080/registry',
 *         'level' => 'info',
 *     ]));
 *
 * Records are encoded when they are handled, so a value that does not
 * fit its Avro schema is refused there (reported with the field's path,
 * nothing sent for it) and the others go on.
 */
abstract class MonologHandlerBase
{
    /** Monolog's level names and values. */
    public const LEVELS = [
        'debug' => 100, 'info' => 200, 'notice' => 250, 'warning' => 300,
        'error' => 400, 'critical' => 500, 'alert' => 550, 'emergency' => 600,
    ];

    /** @var array<string, mixed> */
    private const DEFAULTS = [
        // A Producer to use; else one is built from 'brokers' and 'kafka'.
        'producer' => null,
        'brokers' => null,
        // Further Producer options (tls, sasl, timeout, metadataCache, ...).
        'kafka' => [],
        // Channel => topic; 'topic' for every other channel (null: those are not handled).
        'topics' => [],
        'topic' => null,
        // Channel => Avro subject (with 'registry' or 'serializer'); channels without one are JSON.
        'subjects' => [],
        'registry' => null,
        'serializer' => null,
        // Least level handled: Monolog value, name or Level enum.
        'level' => 'debug',
        'bubble' => true,
        // true: wait for all in-sync replicas (acks -1); false: do not wait for any answer (acks 0).
        'requireAck' => true,
        // false: close() throws a KafkaException when records could not be encoded or produced.
        'swallowExceptions' => true,
        // Write failures to error_log().
        'logExceptions' => true,
        // callable(string $message, array $context): void — each failure.
        'onError' => null,
        // callable(array $record): ?array — the event of a record (Monolog 2 keys); default its context.
        'mapper' => null,
        // callable(array $record): ?string — the record's Kafka key; default none (random partition).
        'key' => null,
        // Most records kept for the request's produce; past it records are dropped (and reported).
        'maxBuffer' => 1000,
    ];

    /** @var array<string, mixed> */
    private array $opts;

    private int $level;

    private ?Producer $producer;

    private ?AvroSerializer $serializer;

    /** @var list<callable> */
    private array $processors = [];

    /** @var list<array{0: string, 1: string, 2: ?string}> */
    private array $buffer = [];

    /** @var list<string> failures since the last close() */
    private array $failures = [];

    private bool $shutdownRegistered = false;

    /** @param array<string, mixed> $options See DEFAULTS above. */
    public function __construct(array $options)
    {
        foreach ($options as $k => $_) {
            if (!array_key_exists($k, self::DEFAULTS)) {
                throw new \InvalidArgumentException("Kafka MonologHandler: unknown option '$k'");
            }
        }
        $this->opts = $options + self::DEFAULTS;
        $this->level = self::levelValue($this->opts['level']);
        $this->producer = $this->opts['producer'] instanceof Producer ? $this->opts['producer'] : null;
        if ($this->producer === null) {
            $this->producer = new Producer(['brokers' => $this->opts['brokers'] ?? [], 'acks' => $this->opts['requireAck'] ? -1 : 0,
                'errorLog' => false] + (is_array($this->opts['kafka']) ? $this->opts['kafka'] : []));
        }
        $this->serializer = $this->opts['serializer'] instanceof AvroSerializer ? $this->opts['serializer']
            : (is_string($this->opts['registry']) ? new AvroSerializer(['registry' => $this->opts['registry']]) : null);
    }

    /**
     * Whether the record's level is at least the handler's and its channel has a topic.
     *
     * @param array<string, mixed>|object $record
     */
    public function isHandling(array|object $record): bool
    {
        return self::recordLevel($record) >= $this->level && $this->topicOf(self::field($record, 'channel')) !== null;
    }

    /**
     * Encodes the record and keeps it for the request's produce. Returns
     * true when the record must not bubble to further handlers.
     *
     * @param array<string, mixed>|object $record
     */
    public function handle(array|object $record): bool
    {
        if (!$this->isHandling($record)) {
            return false;
        }
        foreach ($this->processors as $p) {
            $record = $p($record);
        }
        $this->write(\EventLogging\MonologHandlerBase::toArray($record));
        return false === $this->opts['bubble'];
    }

    /** @param array<array<string, mixed>|object> $records */
    public function handleBatch(array $records): void
    {
        foreach ($records as $r) {
            $this->handle($r);
        }
    }

    /**
     * Encodes one record (Monolog 2 keys) into the buffer. Never throws.
     *
     * @param array<string, mixed> $record
     */
    public function write(array $record): void
    {
        $channel = (string) ($record['channel'] ?? '');
        $topic = $this->topicOf($channel);
        if ($topic === null) {
            return;
        }
        if (count($this->buffer) >= (int) $this->opts['maxBuffer']) {
            $this->fail("channel $channel: buffer full ({$this->opts['maxBuffer']} records); record dropped");
            return;
        }
        try {
            $mapper = $this->opts['mapper'];
            $event = is_callable($mapper) ? $mapper($record) : ($record['context'] ?? []);
            if ($event === null) {
                return;
            }
            if (!is_array($event)) {
                throw new KafkaException('the mapper must return an array or null');
            }
            $subject = $this->opts['subjects'][$channel] ?? null;
            if (is_string($subject)) {
                if ($this->serializer === null) {
                    throw new KafkaException("channel $channel has subject $subject but no 'registry' or 'serializer' is set");
                }
                $value = $this->serializer->serialize($subject, $event);
            } else {
                $value = json_encode(self::jsonable($event === [] ? new \stdClass() : $event),
                    JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PRESERVE_ZERO_FRACTION | JSON_INVALID_UTF8_SUBSTITUTE);
            }
            $keyFn = $this->opts['key'];
            $key = is_callable($keyFn) ? $keyFn($record) : null;
            $this->buffer[] = [$topic, $value, $key === null ? null : (string) $key];
        } catch (\Throwable $e) {
            $this->fail("channel $channel: record not sent: " . $e->getMessage());
            return;
        }
        if (!$this->shutdownRegistered) {
            $this->shutdownRegistered = true;
            register_shutdown_function([$this, 'close']);
        }
    }

    /**
     * Produces the buffered records with one sendMany. Never throws unless
     * 'swallowExceptions' is false and a record could not be encoded or
     * produced since the last close().
     */
    public function close(): void
    {
        if ($this->buffer !== []) {
            $records = $this->buffer;
            $this->buffer = [];
            if (!$this->producer->sendMany($records)) {
                $this->fail('could not produce ' . count($records) . ' log record(s): ' . ($this->producer->lastResult()['error'] ?? 'unknown error'));
            }
        }
        $failures = $this->failures;
        $this->failures = [];
        if ($failures !== [] && !$this->opts['swallowExceptions']) {
            throw new KafkaException('EventLogging Kafka MonologHandler: ' . implode('; ', $failures));
        }
    }

    public function __destruct()
    {
        try {
            $this->close();
        } catch (\Throwable) {
            // A destructor must not throw; the failure was reported.
        }
    }

    /** The records waiting for close(). */
    public function pending(): int
    {
        return count($this->buffer);
    }

    /** The producer (its lastResult() tells what the last close() sent). */
    public function producer(): Producer
    {
        return $this->producer;
    }

    /** Adds a processor: callable(record): record, run before write. */
    public function pushProcessor(callable $callback): static
    {
        array_unshift($this->processors, $callback);
        return $this;
    }

    /** Removes and returns the last added processor. */
    public function popProcessor(): callable
    {
        if ($this->processors === []) {
            throw new \LogicException('You tried to pop from an empty processor stack.');
        }
        return array_shift($this->processors);
    }

    public function getLevel(): int
    {
        return $this->level;
    }

    public function setLevel(int|string|object $level): static
    {
        $this->level = self::levelValue($level);
        return $this;
    }

    public function getBubble(): bool
    {
        return (bool) $this->opts['bubble'];
    }

    public function setBubble(bool $bubble): static
    {
        $this->opts['bubble'] = $bubble;
        return $this;
    }

    // ---- internals ----

    private function topicOf(mixed $channel): ?string
    {
        $t = $this->opts['topics'][(string) $channel] ?? $this->opts['topic'];
        return is_string($t) && $t !== '' ? $t : null;
    }

    private function fail(string $message): void
    {
        $this->failures[] = $message;
        $cb = $this->opts['onError'];
        if (is_callable($cb)) {
            try {
                $cb($message, []);
            } catch (\Throwable) {
            }
        }
        if ($this->opts['logExceptions']) {
            error_log('EventLogging: Kafka MonologHandler: ' . $message);
        }
    }

    /** Values JSON can hold: times as RFC 3339, exceptions as class, message, code, file, line. */
    private static function jsonable(mixed $v): mixed
    {
        if ($v instanceof \DateTimeInterface) {
            return $v->format(\DateTimeInterface::RFC3339_EXTENDED);
        }
        if ($v instanceof \Throwable) {
            return ['class' => get_class($v), 'message' => $v->getMessage(), 'code' => $v->getCode(), 'file' => $v->getFile() . ':' . $v->getLine()];
        }
        if ($v instanceof \JsonSerializable) {
            return $v;
        }
        if (is_array($v)) {
            return array_map([self::class, 'jsonable'], $v);
        }
        if ($v instanceof \stdClass) {
            return $v;
        }
        if (is_object($v)) {
            return method_exists($v, '__toString') ? (string) $v : '[object ' . get_class($v) . ']';
        }
        return $v;
    }

    /** @param array<string, mixed>|object $record */
    private static function field(array|object $record, string $name): mixed
    {
        return is_array($record) ? ($record[$name] ?? null) : ($record->$name ?? null);
    }

    /** @param array<string, mixed>|object $record */
    private static function recordLevel(array|object $record): int
    {
        $level = self::field($record, 'level') ?? self::field($record, 'level_name');
        return $level === null ? 0 : self::levelValue($level);
    }

    private static function levelValue(mixed $level): int
    {
        if ($level instanceof \BackedEnum) {
            return (int) $level->value;
        }
        if (is_int($level)) {
            return $level;
        }
        if (is_string($level) && isset(self::LEVELS[strtolower($level)])) {
            return self::LEVELS[strtolower($level)];
        }
        return is_string($level) && ctype_digit($level) ? (int) $level : 0;
    }
}

if (interface_exists(\Monolog\Handler\HandlerInterface::class)) {
    /**
     * Monolog handler producing log records to Kafka; with Monolog
     * installed it implements Monolog\Handler\HandlerInterface, so
     * $logger->pushHandler(new EventLogging\Kafka\MonologHandler([...])) works.
     */
    final class MonologHandler extends MonologHandlerBase implements \Monolog\Handler\HandlerInterface
    {
    }
} else {
    /**
     * Monolog handler producing log records to Kafka (Monolog is not
     * installed: same methods, no interface).
     */
    final class MonologHandler extends MonologHandlerBase
    {
    }
}
