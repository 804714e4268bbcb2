<?php

// Checks that MonologHandler and Kafka\MonologHandler are valid
// Monolog\Handler\HandlerInterface when Monolog is installed, without
// installing it: declares the interface as Monolog 2 or 3 does (the
// version is the first argument), loads the client, and logs a record
// through the interface.
//
//     php monolog_shape.php 2|3

declare(strict_types=1);

namespace Monolog {
    if (($argv[1] ?? '') === '3') {
        enum Level: int
        {
            case Debug = 100;
            case Warning = 300;
        }

        final class LogRecord
        {
            public function __construct(
                public readonly \DateTimeImmutable $datetime,
                public readonly string $channel,
                public readonly Level $level,
                public readonly string $message,
                public readonly array $context = [],
                public readonly array $extra = [],
            ) {
            }

            public function toArray(): array
            {
                return ['message' => $this->message, 'context' => $this->context, 'level' => $this->level->value,
                    'level_name' => strtoupper($this->level->name), 'channel' => $this->channel, 'datetime' => $this->datetime, 'extra' => $this->extra];
            }
        }
    }
}

namespace Monolog\Handler {
    if (($argv[1] ?? '') === '3') {
        interface HandlerInterface
        {
            public function isHandling(\Monolog\LogRecord $record): bool;
            public function handle(\Monolog\LogRecord $record): bool;
            public function handleBatch(array $records): void;
            public function close(): void;
        }
    } else {
        interface HandlerInterface
        {
            public function isHandling(array $record): bool;
            public function handle(array $record): bool;
            public function handleBatch(array $records): void;
            public function close(): void;
        }
    }
}

namespace {
    require __DIR__ . '/../autoload.php';

    use EventLogging\EventLogging;
    use EventLogging\MonologHandler;

    $sent = [];
    EventLogging::configure(['url' => 'http://intake.test', 'errorLog' => false, 'flushOnShutdown' => false,
        'transport' => function (string $url, string $body) use (&$sent): array {
            $sent[] = json_decode($body, true);
            return ['status' => 201, 'body' => '{"accepted":1,"invalid":0,"events":[{"index":0,"status":"accepted"}]}'];
        }]);
    $h = new MonologHandler('PhpLog', 900100, 'warning');
    if (!$h instanceof Monolog\Handler\HandlerInterface) {
        fwrite(STDERR, "MonologHandler does not implement Monolog\\Handler\\HandlerInterface\n");
        exit(1);
    }
    /** @var Monolog\Handler\HandlerInterface $iface */
    $iface = $h;
    $record = ($argv[1] ?? '') === '3'
        ? new Monolog\LogRecord(new DateTimeImmutable(), 'app', Monolog\Level::Warning, 'through the interface')
        : ['message' => 'through the interface', 'context' => [], 'level' => 300, 'level_name' => 'WARNING', 'channel' => 'app', 'datetime' => new DateTimeImmutable(), 'extra' => []];
    $iface->handle($record);
    $iface->close();
    $event = $sent[0][0]['event'] ?? null;
    if ($event !== ['message' => 'through the interface', 'channel' => 'app', 'level' => 'WARNING']) {
        fwrite(STDERR, 'unexpected event: ' . json_encode($sent) . "\n");
        exit(1);
    }

    // The Kafka transport's handler too: through the interface, the record
    // is encoded and kept for the produce at close() (no broker here: the
    // produce fails, is reported, and nothing throws).
    $failed = [];
    $k = new \EventLogging\Kafka\MonologHandler(['brokers' => ['127.0.0.1:1'], 'topic' => 'app_logs', 'level' => 'warning',
        'logExceptions' => false, 'kafka' => ['timeout' => 0.2], 'onError' => function (string $m) use (&$failed): void {
            $failed[] = $m;
        }]);
    if (!$k instanceof Monolog\Handler\HandlerInterface) {
        fwrite(STDERR, "EventLogging\\Kafka\\MonologHandler does not implement Monolog\\Handler\\HandlerInterface\n");
        exit(1);
    }
    /** @var Monolog\Handler\HandlerInterface $kiface */
    $kiface = $k;
    $kiface->handle($record);
    if ($k->pending() !== 1) {
        fwrite(STDERR, 'Kafka handler: ' . $k->pending() . " records pending, want 1\n");
        exit(1);
    }
    $kiface->close();
    if (count($failed) !== 1 || !str_contains($failed[0], 'could not produce 1 log record')) {
        fwrite(STDERR, 'Kafka handler: reported ' . json_encode($failed) . "\n");
        exit(1);
    }
    echo "ok: Monolog {$argv[1]} HandlerInterface (EventLogging\\MonologHandler, EventLogging\\Kafka\\MonologHandler)\n";
}
