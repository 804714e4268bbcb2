<?php

declare(strict_types=1);

namespace EventLogging;

/**
 * The body of MonologHandler: the shape of Monolog's
 * AbstractProcessingHandler (isHandling, handle, handleBatch, close,
 * processors, level, bubble) without requiring Monolog. Each handled log
 * record becomes one event of a configurable legacy schema, queued with
 * EventLogging::logEvent and sent with the request's single flush.
 *
 * Records may be Monolog 1/2 arrays or Monolog 3 LogRecord objects (any
 * object with toArray(), or with public message/level/channel/context).
 */
abstract class MonologHandlerBase
{
    /** Monolog's level names and values. */
    public const LEVELS = [
        'debug' => 100, 'info' => 200, 'notice' => 250, 'warning' => 300,
        'error' => 400, 'critical' => 500, 'alert' => 550, 'emergency' => 600,
    ];

    private int $level;

    /** @var list<callable> */
    private array $processors = [];

    /** @var callable(array<string, mixed>): (array<string, mixed>|null) */
    private $mapper;

    /**
     * @param string $schema Legacy schema of the events, e.g. "PhpLog".
     * @param int $revision Its revision.
     * @param int|string|object $level Least level handled: a Monolog value (300), name ('warning') or Level enum.
     * @param bool $bubble Whether handled records go on to the next handler.
     * @param (callable(array<string, mixed>): (array<string, mixed>|null))|null $mapper Turns a record
     *   (as an array: message, context, level, level_name, channel, datetime, extra) into the event's
     *   fields; null skips the record. Default: {message, channel, level, context?} — see defaultEvent().
     */
    public function __construct(
        private string $schema,
        private int $revision,
        int|string|object $level = 'debug',
        private bool $bubble = true,
        ?callable $mapper = null,
    ) {
        $this->level = self::levelValue($level);
        $this->mapper = $mapper ?? [self::class, 'defaultEvent'];
    }

    /**
     * Whether the record's level is at least the handler's.
     *
     * @param array<string, mixed>|object $record
     */
    public function isHandling(array|object $record): bool
    {
        return self::recordLevel($record) >= $this->level;
    }

    /**
     * Handles one record: runs the processors, writes the event. Returns true
     * when the record must not bubble to further handlers (Monolog's contract).
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
        $this->write(self::toArray($record));
        return false === $this->bubble;
    }

    /**
     * @param array<array<string, mixed>|object> $records
     */
    public function handleBatch(array $records): void
    {
        foreach ($records as $r) {
            $this->handle($r);
        }
    }

    /**
     * Turns the record into an event and queues it. Never throws.
     *
     * @param array<string, mixed> $record
     */
    public function write(array $record): void
    {
        try {
            $event = ($this->mapper)($record);
        } catch (\Throwable $e) {
            error_log('EventLogging: MonologHandler mapper failed: ' . $e->getMessage());
            return;
        }
        if (is_array($event)) {
            EventLogging::logEvent($this->schema, $this->revision, $event);
        }
    }

    /** Sends what is queued (Monolog calls close() when a logger is reset or destroyed). */
    public function close(): void
    {
        EventLogging::flush();
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
        return $this->bubble;
    }

    public function setBubble(bool $bubble): static
    {
        $this->bubble = $bubble;
        return $this;
    }

    /**
     * The default event of a record: message (at most 1,000 characters),
     * channel, level (Monolog's name, e.g. "ERROR") and, when not empty,
     * context as JSON text.
     *
     * @param array<string, mixed> $record
     * @return array<string, mixed>
     */
    public static function defaultEvent(array $record): array
    {
        $event = [
            'message' => self::truncate((string) ($record['message'] ?? ''), 1000),
            'channel' => (string) ($record['channel'] ?? ''),
            'level' => strtoupper((string) ($record['level_name'] ?? (array_search(self::recordLevel($record), self::LEVELS, true) ?: 'unknown'))),
        ];
        $context = $record['context'] ?? [];
        if ($context !== [] && $context !== null) {
            $json = json_encode($context, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PARTIAL_OUTPUT_ON_ERROR);
            if (is_string($json)) {
                $event['context'] = $json;
            }
        }
        return $event;
    }

    /** The first $max characters of $s (UTF-8; bytes when $s is not UTF-8). */
    private static function truncate(string $s, int $max): string
    {
        if (strlen($s) <= $max) {
            return $s;
        }
        if (preg_match('/^.{0,' . $max . '}/su', $s, $m) === 1) {
            return $m[0];
        }
        return substr($s, 0, $max);
    }

    /**
     * A record as an array with Monolog 2's keys.
     *
     * @param array<string, mixed>|object $record
     * @return array<string, mixed>
     */
    public static function toArray(array|object $record): array
    {
        if (is_array($record)) {
            return $record;
        }
        $a = method_exists($record, 'toArray') ? $record->toArray() : get_object_vars($record);
        if (isset($a['level']) && $a['level'] instanceof \BackedEnum) {
            $a['level'] = $a['level']->value;
        }
        if (!isset($a['level_name']) && is_int($a['level'] ?? null)) {
            $name = array_search($a['level'], self::LEVELS, true);
            if ($name !== false) {
                $a['level_name'] = strtoupper($name);
            }
        }
        return $a;
    }

    /** @param array<string, mixed>|object $record */
    private static function recordLevel(array|object $record): int
    {
        $level = is_array($record) ? ($record['level'] ?? null) : ($record->level ?? null);
        if ($level === null) {
            $level = is_array($record) ? ($record['level_name'] ?? null) : ($record->level_name ?? null);
        }
        return $level === null ? 0 : self::levelValue($level);
    }

    private static function levelValue(int|string|object $level): int
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
        if (is_string($level) && ctype_digit($level)) {
            return (int) $level;
        }
        return 0;
    }
}

if (interface_exists(\Monolog\Handler\HandlerInterface::class)) {
    /**
     * Monolog handler that logs records as EventLogging events; with Monolog
     * installed it implements Monolog\Handler\HandlerInterface, so
     * $logger->pushHandler(new MonologHandler('PhpLog', 1, 'warning')) works.
     */
    final class MonologHandler extends MonologHandlerBase implements \Monolog\Handler\HandlerInterface
    {
    }
} else {
    /**
     * Monolog handler that logs records as EventLogging events (Monolog is
     * not installed: same methods, no interface).
     */
    final class MonologHandler extends MonologHandlerBase
    {
    }
}
