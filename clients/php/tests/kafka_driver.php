<?php

// Drives the Kafka transport against real brokers, for
// test/e2e/clients_php_kafka_test.go. OPTIONS is a JSON object.
//
//     php kafka_driver.php produce OPTIONS
//         Producer options. Reads commands from stdin, one JSON object a
//         line: {"records": [[topic, value, key?, headers?], ...],
//         "fresh": bool (a new Producer; the process's metadata cache
//         stays)}; for each prints {"ok", "result" (lastResult()),
//         "reported" (onError messages)} as one line.
//     php kafka_driver.php serverside OPTIONS
//         EventLogging::configure(OPTIONS + transport kafka); logs
//         OPTIONS.events ([schema, revision, event] each) and submits
//         OPTIONS.submit ([stream, event] each); the shutdown flush prints
//         its result (onResult) as one line.
//     php kafka_driver.php monolog OPTIONS
//         Declares Monolog 3's LogRecord and Level (Monolog is not
//         installed), builds EventLogging\Kafka\MonologHandler from
//         OPTIONS.handler, handles OPTIONS.records ([channel, level name,
//         message, context] each, as Monolog 3 LogRecords; a context string
//         "@datetime:2026-..." becomes a DateTimeImmutable), closes it,
//         prints {"ok", "result", "reported", "pending"} as one line.
//     php kafka_driver.php bench OPTIONS
//         OPTIONS.n sendMany calls of OPTIONS.batch records of
//         OPTIONS.size bytes to OPTIONS.topic in this process; prints
//         {"records", "seconds", "failed"}.
//     php kafka_driver.php post URL
//         One event through the HTTP transport (for timing comparisons).

declare(strict_types=1);

namespace Monolog {
    if (($argv[1] ?? '') === 'monolog' && !class_exists(LogRecord::class)) {
        enum Level: int
        {
            case Debug = 100;
            case Info = 200;
            case Notice = 250;
            case Warning = 300;
            case Error = 400;
            case Critical = 500;
            case Alert = 550;
            case Emergency = 600;
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

namespace {
    require __DIR__ . '/../autoload.php';

    use EventLogging\EventLogging;
    use EventLogging\Kafka\MonologHandler;
    use EventLogging\Kafka\Producer;

    ini_set('display_errors', 'stderr'); // stdout carries the results only
    $mode = $argv[1] ?? '';
    $arg = $argv[2] ?? '';
    $opts = $mode === 'post' ? [] : json_decode($arg, true);
    if (!is_array($opts) || !in_array($mode, ['produce', 'serverside', 'monolog', 'bench', 'post'], true)) {
        fwrite(STDERR, "usage: php kafka_driver.php produce|serverside|monolog|bench OPTIONS_JSON | post URL\n");
        exit(2);
    }
    $reported = [];
    $onError = function (string $msg) use (&$reported): void {
        $reported[] = $msg;
    };
    $line = static fn (array $v): string => json_encode($v, JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION) . "\n";

    switch ($mode) {
        case 'produce':
            $producer = null;
            while (($cmd = fgets(STDIN)) !== false) {
                $c = json_decode($cmd, true);
                if (!is_array($c)) {
                    continue;
                }
                if ($producer === null || !empty($c['fresh'])) {
                    $producer = new Producer($opts + ['onError' => $onError, 'errorLog' => false]);
                }
                $reported = [];
                $ok = $producer->sendMany($c['records']);
                echo $line(['ok' => $ok, 'result' => $producer->lastResult(), 'reported' => $reported]);
            }
            break;

        case 'serverside':
            $events = $opts['events'] ?? [];
            $submit = $opts['submit'] ?? [];
            unset($opts['events'], $opts['submit']);
            EventLogging::configure($opts + [
                'transport' => 'kafka',
                'errorLog' => false,
                'onError' => $onError,
                'onResult' => function (array $r) use (&$reported, $line): void {
                    $r['reported'] = $reported;
                    echo $line($r);
                },
            ]);
            foreach ($events as [$schema, $revision, $event]) {
                EventLogging::logEvent($schema, $revision, $event);
            }
            foreach ($submit as [$stream, $event]) {
                EventLogging::submit($stream, $event);
            }
            break;

        case 'monolog':
            $h = new MonologHandler($opts['handler'] + ['onError' => $onError, 'logExceptions' => false]);
            foreach ($opts['records'] as [$channel, $level, $message, $context]) {
                array_walk_recursive($context, static function (mixed &$v): void {
                    if (is_string($v) && str_starts_with($v, '@datetime:')) {
                        $v = new DateTimeImmutable(substr($v, 10));
                    }
                });
                $h->handle(new Monolog\LogRecord(new DateTimeImmutable(), $channel, constant(Monolog\Level::class . '::' . ucfirst(strtolower($level))), $message, $context));
            }
            $pending = $h->pending();
            $h->close();
            $r = $h->producer()->lastResult();
            echo $line(['ok' => $r !== null && $r['ok'], 'result' => $r, 'reported' => $reported, 'pending' => $pending]);
            break;

        case 'bench':
            $producer = new Producer(($opts['producer'] ?? []) + ['onError' => $onError, 'errorLog' => false]);
            $value = str_repeat('x', (int) $opts['size']);
            $batch = [];
            for ($i = 0; $i < (int) $opts['batch']; $i++) {
                $batch[] = [$opts['topic'], $value];
            }
            $producer->sendMany($batch); // connections and metadata, not timed
            $failed = 0;
            $t0 = hrtime(true);
            for ($i = 0; $i < (int) $opts['n']; $i++) {
                $failed += $producer->sendMany($batch) ? 0 : 1;
            }
            $seconds = (hrtime(true) - $t0) / 1e9;
            echo $line(['records' => (int) $opts['n'] * (int) $opts['batch'], 'seconds' => $seconds, 'failed' => $failed, 'reported' => array_slice($reported, 0, 3)]);
            break;

        case 'post':
            EventLogging::configure(['url' => $arg, 'errorLog' => false, 'flushOnShutdown' => false, 'onError' => $onError]);
            EventLogging::logEvent('SearchQuery', 5, ['query' => 'php timing', 'results' => 1, 'source' => 'fulltext']);
            $ok = EventLogging::flush();
            echo $line(['ok' => $ok, 'result' => EventLogging::lastResult(), 'reported' => $reported]);
            break;
    }
}
