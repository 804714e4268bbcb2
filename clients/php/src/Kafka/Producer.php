<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * A produce-only Kafka client in pure PHP, for short-lived processes that
 * write a few records per request (a web request, a CLI job): it speaks
 * ApiVersions, Metadata, Produce (v3 to v8, RecordBatch v2) and SASL
 * (PLAIN, SCRAM-SHA-256/512) over TCP or TLS, with one deadline for the
 * whole send. It is not a consumer and not a long-lived, batching
 * producer: each send() waits for its acknowledgement (acks -1 or 1) and
 * keeps nothing in memory once it returns.
 *
 *     $p = new EventLogging\Kafka\Producer(['brokers' => ['kafka1:9092', 'kafka2:9092']]);
 *     $p->send('eventlogging-server-side', $line);                 // random partition
 *     $p->send('orders', json_encode($order), (string) $order['id']); // murmur2(key), as Java
 *
 * It never throws unless 'throw' is true: a failure returns false, is
 * passed to 'onError' and written to error_log, and lastResult() says
 * what happened to each record.
 *
 * Delivery: a true return means every record was acknowledged by its
 * leader (acks -1: by all in-sync replicas). After NOT_LEADER_OR_FOLLOWER,
 * an unreachable leader or a broken connection the metadata is refreshed
 * and the failed records are sent once more, within the timeout; a record
 * whose first request broke after it was sent may then be written twice
 * (at-least-once; the producer is not idempotent, see docs/clients/php.md).
 */
final class Producer
{
    /** Version of this client. */
    public const VERSION = '1.0.0';

    /** @var array<string, mixed> */
    private const DEFAULTS = [
        // Bootstrap brokers, "host:port" each. Required.
        'brokers' => [],
        // -1: all in-sync replicas; 1: the leader; 0: no acknowledgement (fire and forget).
        'acks' => -1,
        // Seconds for the whole send: metadata, connections, requests, answers, the retry.
        'timeout' => 1.0,
        // Seconds for one TCP connection, within 'timeout'.
        'connectTimeout' => 1.0,
        // false, true (system CAs), or [cafile, capath, peer_name, cert, key, passphrase, verify].
        'tls' => false,
        // null, or ['mechanism' => 'PLAIN'|'SCRAM-SHA-256'|'SCRAM-SHA-512', 'username' => ..., 'password' => ...].
        'sasl' => null,
        'clientId' => 'eventlogging-php',
        // Where topic metadata (partitions, leaders) and broker API versions are kept:
        // 'none' asks on every send; 'process' keeps them for this PHP process
        // (under PHP-FPM: one request); 'apcu' shares them between the processes
        // of a server (falls back to 'process' without the apcu extension).
        'metadataCache' => 'process',
        // Seconds cached metadata is used before it is asked again.
        'metadataMaxAge' => 300,
        // callable(string $message, array $context): void — each failed send.
        'onError' => null,
        // Write failures to error_log() as well.
        'errorLog' => true,
        // true: a failed send throws KafkaException instead of returning false.
        'throw' => false,
    ];

    private const METADATA_VERSIONS = [1, 8];

    private const PRODUCE_VERSIONS = [3, 8];

    /** Seconds to wait before the second try after a leadership error (at most a third of the time left). */
    private const RETRY_BACKOFF = 0.1;

    /** UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH. */
    private const LEADERSHIP_ERRORS = [3, 5, 6, 74, 75];

    /** @var array<string, mixed> */
    private array $opts;

    private ?string $configError = null;

    private string $cacheKey;

    /** @var array<string, Connection> open connections by "host:port" */
    private array $conns = [];

    /** @var array<string, mixed>|null */
    private ?array $last = null;

    /** @var array<string, array{at: float, n: int, leaders: array<int, ?string>}> topic metadata ('process' cache) */
    private static array $topics = [];

    /** @var array<string, array<int, array{0: int, 1: int}>> API versions by broker address ('process' cache) */
    private static array $versions = [];

    /**
     * @param array<string, mixed> $options See DEFAULTS above; unknown keys are refused.
     */
    public function __construct(array $options)
    {
        $this->opts = self::DEFAULTS;
        foreach ($options as $k => $v) {
            if (!array_key_exists($k, self::DEFAULTS)) {
                $this->configError ??= "unknown option '$k'";
                continue;
            }
            $this->opts[$k] = $v;
        }
        $this->configError ??= $this->checkOptions();
        $brokers = is_array($this->opts['brokers']) ? array_values(array_map('strval', $this->opts['brokers'])) : [];
        $this->opts['brokers'] = $brokers;
        if ($this->opts['metadataCache'] === 'apcu' && !(function_exists('apcu_fetch') && apcu_enabled())) {
            $this->opts['metadataCache'] = 'process';
        }
        $sorted = $brokers;
        sort($sorted);
        $this->cacheKey = 'eventlogging-kafka:' . substr(sha1(implode(',', $sorted)), 0, 16) . ':';
        if ($this->configError !== null && $this->opts['throw']) {
            throw new KafkaException('Producer: ' . $this->configError);
        }
    }

    /**
     * Produces one record and waits for its acknowledgement. No key: a
     * random partition; a key: toPositive(murmur2(key)) % partitions.
     *
     * @param array<string, ?string>|list<array{0: string, 1: ?string}> $headers name => value, or [name, value] pairs
     */
    public function send(string $topic, string $value, ?string $key = null, array $headers = []): bool
    {
        return $this->sendMany([[$topic, $value, $key, $headers]]);
    }

    /**
     * Produces records ([topic, value, key?, headers?] each) with one
     * Produce request per leader broker, the requests in flight together,
     * and waits for every acknowledgement. Records without a key go to one
     * random partition per topic. True when every record was acknowledged.
     *
     * @param list<array{0: string, 1: string, 2?: ?string, 3?: array<mixed>}> $records
     */
    public function sendMany(array $records): bool
    {
        $start = hrtime(true);
        $deadline = $start + (int) ((float) $this->opts['timeout'] * 1e9);
        $this->last = ['ok' => false, 'error' => null, 'records' => [], 'attempts' => 0, 'metadata' => 'cache', 'elapsed' => 0.0];
        try {
            if ($this->configError !== null) {
                throw new KafkaException($this->configError);
            }
            $recs = self::normalize($records);
            $this->produce($recs, $deadline);
        } catch (KafkaException $e) {
            $this->last['error'] = $e->getMessage();
        } catch (\Throwable $e) {
            // A bug here must not reach the page either.
            $this->last['error'] = get_class($e) . ': ' . $e->getMessage();
        }
        $this->last['elapsed'] = (hrtime(true) - $start) / 1e9;
        if ($this->last['error'] === null) {
            $this->last['ok'] = true;
            return true;
        }
        $msg = 'Kafka produce of ' . count($records) . ' record(s) failed: ' . $this->last['error'];
        if ($this->opts['throw']) {
            throw new KafkaException($msg);
        }
        $this->report($msg, ['records' => count($records), 'elapsed' => $this->last['elapsed']]);
        return false;
    }

    /**
     * What the last send did: ok, error (the first failure's message),
     * records (topic, partition, offset — -1 with acks 0 —, error for each,
     * in order), attempts (2 when failed records were sent again),
     * metadata ('cache' or 'fetched') and elapsed (seconds).
     *
     * @return array<string, mixed>|null
     */
    public function lastResult(): ?array
    {
        return $this->last;
    }

    /** Closes the connections (also done when the object is destroyed). */
    public function close(): void
    {
        foreach ($this->conns as $c) {
            $c->close();
        }
        $this->conns = [];
    }

    public function __destruct()
    {
        $this->close();
    }

    /** Forgets the metadata and API versions cached in this process (tests). */
    public static function clearCache(): void
    {
        self::$topics = [];
        self::$versions = [];
    }

    // ---- sending ----

    /**
     * @param list<array{0: string, 1: string, 2: ?string, 3: list<array{0: string, 1: ?string}>}> $recs
     */
    private function produce(array $recs, int $deadline): void
    {
        $n = count($recs);
        /** @var array<int, array{topic: string, partition: int, offset: ?int, error: ?string}> $state */
        $state = [];
        foreach ($recs as $i => $r) {
            $state[$i] = ['topic' => $r[0], 'partition' => -1, 'offset' => null, 'error' => 'not sent'];
        }
        $pending = array_keys($recs);
        // Leaders that could not be reached: a record without a key is sent
        // again to a partition whose leader is another broker (the metadata
        // names a dead leader until the controller fences it, seconds later).
        $dead = [];
        for ($attempt = 0; $attempt < 2 && $pending !== []; $attempt++) {
            $this->last['attempts'] = $attempt + 1;
            /** @var array<int, KafkaException> $failed */
            $failed = [];
            $fail = static function (array $idx, KafkaException $e) use (&$failed): void {
                foreach ($idx as $i) {
                    $failed[$i] = $e;
                }
            };
            $topics = array_values(array_unique(array_map(static fn (int $i): string => $recs[$i][0], $pending)));
            try {
                $meta = $this->metadata($topics, $attempt > 0, $deadline);
            } catch (KafkaException $e) {
                $fail($pending, $e);
                $meta = [];
            }
            // Route each record to its partition and that partition's leader.
            $byLeader = [];
            $sticky = [];
            foreach ($meta === [] ? [] : $pending as $i) {
                [$topic, , $key] = $recs[$i];
                $tm = $meta[$topic];
                if ($tm['error'] === 0 && $tm['n'] === 0) {
                    $tm['error'] = 5; // no partitions listed: nothing to route to yet
                }
                if ($tm['error'] !== 0) {
                    $fail([$i], new KafkaException("topic $topic: " . Errors::name($tm['error']), $tm['error'], Errors::retriable($tm['error'])));
                    continue;
                }
                $p = $key !== null ? Murmur2::partition($key, $tm['n']) : ($sticky[$topic] ??= self::randomPartition($tm, $dead));
                $state[$i]['partition'] = $p;
                $leader = $p >= 0 ? ($tm['leaders'][$p] ?? null) : null;
                if ($leader === null) {
                    $fail([$i], new KafkaException("topic $topic partition $p: no leader", 5, true));
                    continue;
                }
                $byLeader[$leader][$topic][$p][] = $i;
            }
            // One request per leader, all written before any answer is read.
            $inflight = [];
            foreach ($byLeader as $addr => $parts) {
                $all = self::indexes($parts);
                try {
                    $c = $this->connection((string) $addr, $deadline);
                    $v = $c->version(Connection::PRODUCE, ...self::PRODUCE_VERSIONS);
                    $corr = $c->write(Connection::PRODUCE, $v, $this->produceBody($recs, $parts, $deadline), $deadline);
                    $inflight[] = [(string) $addr, $c, $corr, $v, $parts];
                } catch (KafkaException $e) {
                    $this->drop((string) $addr);
                    $dead[(string) $addr] = true;
                    $fail($all, $e);
                }
            }
            foreach ($inflight as [$addr, $c, $corr, $v, $parts]) {
                if ((int) $this->opts['acks'] === 0) {
                    foreach (self::indexes($parts) as $i) {
                        $state[$i]['offset'] = -1;
                        $state[$i]['error'] = null;
                    }
                    continue;
                }
                try {
                    $answers = self::parseProduce($c->read($corr, $deadline), $v);
                } catch (KafkaException $e) {
                    $this->drop($addr);
                    $dead[$addr] = true;
                    $fail(self::indexes($parts), $e);
                    continue;
                }
                foreach ($parts as $topic => $byPartition) {
                    foreach ($byPartition as $p => $idx) {
                        $a = $answers[$topic][$p] ?? null;
                        if ($a === null) {
                            $fail($idx, new KafkaException("$addr did not answer for $topic/$p"));
                        } elseif ($a[0] !== 0) {
                            $why = Errors::name($a[0]) . ($a[2] !== null && $a[2] !== '' ? ': ' . $a[2] : '');
                            $fail($idx, new KafkaException("$topic/$p at $addr: $why", $a[0], Errors::retriable($a[0])));
                        } else {
                            foreach ($idx as $k => $i) {
                                $state[$i]['offset'] = $a[1] + $k;
                                $state[$i]['error'] = null;
                            }
                        }
                    }
                }
            }
            $pending = [];
            $retryTopics = [];
            $leadership = false;
            foreach ($failed as $i => $e) {
                $state[$i]['error'] = $e->getMessage();
                if ($e->retriable) {
                    $pending[] = $i;
                    $retryTopics[$recs[$i][0]] = true;
                    $leadership = $leadership || in_array($e->kafkaCode, self::LEADERSHIP_ERRORS, true);
                }
            }
            sort($pending);
            if (Connection::left($deadline) <= 0) {
                break; // no time for a second try: the first failure stands
            }
            if ($pending !== [] && $attempt === 0) {
                foreach (array_keys($retryTopics) as $t) {
                    $this->forget((string) $t);
                }
                if ($leadership || $dead !== []) {
                    // A leader that moves (or a topic just made) is known to
                    // the brokers' metadata a moment later: wait as Kafka's
                    // clients do (retry.backoff.ms), within the time left.
                    usleep((int) (min(self::RETRY_BACKOFF, Connection::left($deadline) / 3) * 1e6));
                }
            }
        }
        $this->last['records'] = array_values($state);
        foreach ($state as $s) {
            if ($s['error'] !== null) {
                $bad = count(array_filter($state, static fn (array $s): bool => $s['error'] !== null));
                throw new KafkaException("$bad of $n record(s) not acknowledged: " . $s['error']);
            }
        }
    }

    /**
     * @param list<array{0: string, 1: string, 2: ?string, 3: list<array{0: string, 1: ?string}>}> $recs
     * @param array<string, array<int, list<int>>> $parts
     */
    private function produceBody(array $recs, array $parts, int $deadline): string
    {
        $now = (int) (microtime(true) * 1000);
        $topics = [];
        foreach ($parts as $topic => $byPartition) {
            $ps = [];
            foreach ($byPartition as $p => $idx) {
                $batch = [];
                foreach ($idx as $i) {
                    $batch[] = [$recs[$i][1], $recs[$i][2], $recs[$i][3]];
                }
                $ps[] = Wire::int32($p) . Wire::bytes(RecordBatch::encode($batch, $now));
            }
            $topics[] = Wire::string((string) $topic) . Wire::array($ps);
        }
        $timeoutMs = max(1, (int) (Connection::left($deadline) * 1000));
        return Wire::string(null) . Wire::int16((int) $this->opts['acks']) . Wire::int32($timeoutMs) . Wire::array($topics);
    }

    /**
     * @return array<string, array<int, array{0: int, 1: int, 2: ?string}>> topic => partition => [error, base offset, message]
     */
    private static function parseProduce(Reader $r, int $v): array
    {
        $out = [];
        for ($t = $r->arrayLength(); $t > 0; $t--) {
            $name = $r->string();
            for ($p = $r->arrayLength(); $p > 0; $p--) {
                $index = $r->int32();
                $err = $r->int16();
                $base = $r->int64();
                $r->int64(); // log_append_time
                if ($v >= 5) {
                    $r->int64(); // log_start_offset
                }
                $msg = null;
                if ($v >= 8) {
                    for ($e = $r->arrayLength(); $e > 0; $e--) {
                        $r->int32();
                        $r->nullableString();
                    }
                    $msg = $r->nullableString();
                }
                $out[$name][$index] = [$err, $base, $msg];
            }
        }
        return $out;
    }

    // ---- metadata ----

    /**
     * Partitions and leaders of $topics: from the cache unless $refresh,
     * the cache is 'none', or a topic is missing or older than
     * metadataMaxAge; else asked of a broker.
     *
     * @param list<string> $topics
     * @return array<string, array{error: int, n: int, leaders: array<int, ?string>}>
     */
    private function metadata(array $topics, bool $refresh, int $deadline): array
    {
        $out = [];
        if (!$refresh && $this->opts['metadataCache'] !== 'none') {
            $maxAge = (float) $this->opts['metadataMaxAge'];
            foreach ($topics as $t) {
                $e = $this->cacheGet($t);
                if ($e === null || microtime(true) - $e['at'] > $maxAge) {
                    $out = [];
                    break;
                }
                $out[$t] = ['error' => 0, 'n' => $e['n'], 'leaders' => $e['leaders']];
            }
            if ($out !== []) {
                return $out;
            }
        }
        $this->last['metadata'] = 'fetched';
        $out = $this->fetchMetadata($topics, $deadline);
        foreach ($topics as $t) {
            if (!isset($out[$t])) {
                $out[$t] = ['error' => 3, 'n' => 0, 'leaders' => []];
            } elseif ($out[$t]['error'] === 0 && $this->opts['metadataCache'] !== 'none') {
                $this->cachePut($t, ['at' => microtime(true), 'n' => $out[$t]['n'], 'leaders' => $out[$t]['leaders']]);
            }
        }
        return $out;
    }

    /**
     * Asks a broker (an open connection's first, else the seeds in random
     * order) for the metadata of $topics.
     *
     * @param list<string> $topics
     * @return array<string, array{error: int, n: int, leaders: array<int, ?string>}>
     */
    private function fetchMetadata(array $topics, int $deadline): array
    {
        $seeds = $this->opts['brokers'];
        shuffle($seeds);
        $candidates = array_values(array_unique(array_merge(array_keys($this->conns), $seeds)));
        $errors = [];
        $retriable = false;
        foreach ($candidates as $k => $addr) {
            // With other brokers still to try, one that hangs gets half of what is left.
            $until = $k < count($candidates) - 1 ? hrtime(true) + intdiv(max(0, $deadline - hrtime(true)), 2) : $deadline;
            try {
                $c = $this->connection($addr, $until);
                $v = $c->version(Connection::METADATA, ...self::METADATA_VERSIONS);
                $body = Wire::stringArray($topics)
                    . ($v >= 4 ? "\x00" : '')        // allow_auto_topic_creation: false
                    . ($v >= 8 ? "\x00\x00" : '');   // include authorized operations: no
                return self::parseMetadata($c->request(Connection::METADATA, $v, $body, $until), $v);
            } catch (KafkaException $e) {
                $this->drop($addr);
                $errors[] = $e->getMessage();
                $retriable = $retriable || $e->retriable;
                if (Connection::left($deadline) <= 0) {
                    break;
                }
            }
        }
        throw new KafkaException('no broker answered metadata: ' . implode('; ', $errors), -1, $retriable);
    }

    /**
     * @return array<string, array{error: int, n: int, leaders: array<int, ?string>}>
     */
    private static function parseMetadata(Reader $r, int $v): array
    {
        if ($v >= 3) {
            $r->int32(); // throttle_time_ms
        }
        $brokers = [];
        for ($n = $r->arrayLength(); $n > 0; $n--) {
            $id = $r->int32();
            $host = $r->string();
            $port = $r->int32();
            $r->nullableString(); // rack
            $brokers[$id] = (str_contains($host, ':') ? "[$host]" : $host) . ":$port";
        }
        if ($v >= 2) {
            $r->nullableString(); // cluster_id
        }
        $r->int32(); // controller_id
        $out = [];
        for ($n = $r->arrayLength(); $n > 0; $n--) {
            $err = $r->int16();
            $name = $r->string();
            $r->int8(); // is_internal
            $leaders = [];
            for ($p = $r->arrayLength(); $p > 0; $p--) {
                $perr = $r->int16();
                $index = $r->int32();
                $leader = $r->int32();
                if ($v >= 7) {
                    $r->int32(); // leader_epoch
                }
                $r->int32Array(); // replicas
                $r->int32Array(); // isr
                if ($v >= 5) {
                    $r->int32Array(); // offline replicas
                }
                $leaders[$index] = ($perr === 0 || $perr === 9) && $leader >= 0 ? ($brokers[$leader] ?? null) : null; // 9: REPLICA_NOT_AVAILABLE, the leader is fine
            }
            if ($v >= 8) {
                $r->int32(); // topic_authorized_operations
            }
            ksort($leaders);
            $out[$name] = ['error' => $err, 'n' => count($leaders), 'leaders' => $leaders];
        }
        return $out;
    }

    /**
     * A random partition with a leader, one not in $dead when there is one.
     *
     * @param array{n: int, leaders: array<int, ?string>} $tm
     * @param array<string, true> $dead
     */
    private static function randomPartition(array $tm, array $dead = []): int
    {
        $up = array_keys(array_filter($tm['leaders'], static fn (?string $l): bool => $l !== null && !isset($dead[$l])));
        if ($up === []) {
            $up = array_keys(array_filter($tm['leaders'], static fn (?string $l): bool => $l !== null));
        }
        return $up === [] ? ($tm['n'] > 0 ? mt_rand(0, $tm['n'] - 1) : -1) : $up[mt_rand(0, count($up) - 1)];
    }

    // ---- connections and caches ----

    private function connection(string $addr, int $deadline): Connection
    {
        if (isset($this->conns[$addr])) {
            return $this->conns[$addr];
        }
        $versions = $this->opts['metadataCache'] === 'none' ? null : $this->versionsGet($addr);
        $c = Connection::open($addr, [
            'connectTimeout' => (float) $this->opts['connectTimeout'],
            'tls' => $this->opts['tls'],
            'sasl' => $this->opts['sasl'],
            'clientId' => (string) $this->opts['clientId'],
        ], $deadline, $versions);
        if ($c->askedVersions && $this->opts['metadataCache'] !== 'none') {
            $this->versionsPut($addr, $c->versions);
        }
        return $this->conns[$addr] = $c;
    }

    /** Closes and forgets the connection to $addr and its cached API versions. */
    private function drop(string $addr): void
    {
        if (isset($this->conns[$addr])) {
            $this->conns[$addr]->close();
            unset($this->conns[$addr]);
        }
        unset(self::$versions[$addr]);
        if ($this->opts['metadataCache'] === 'apcu') {
            apcu_delete($this->cacheKey . 'v:' . $addr);
        }
    }

    /** @return array{at: float, n: int, leaders: array<int, ?string>}|null */
    private function cacheGet(string $topic): ?array
    {
        if ($this->opts['metadataCache'] === 'apcu') {
            $v = apcu_fetch($this->cacheKey . 't:' . $topic, $ok);
            return $ok && is_array($v) ? $v : null;
        }
        return self::$topics[$this->cacheKey . $topic] ?? null;
    }

    /** @param array{at: float, n: int, leaders: array<int, ?string>} $entry */
    private function cachePut(string $topic, array $entry): void
    {
        if ($this->opts['metadataCache'] === 'apcu') {
            apcu_store($this->cacheKey . 't:' . $topic, $entry, (int) ceil((float) $this->opts['metadataMaxAge']));
            return;
        }
        self::$topics[$this->cacheKey . $topic] = $entry;
    }

    private function forget(string $topic): void
    {
        unset(self::$topics[$this->cacheKey . $topic]);
        if ($this->opts['metadataCache'] === 'apcu') {
            apcu_delete($this->cacheKey . 't:' . $topic);
        }
    }

    /** @return array<int, array{0: int, 1: int}>|null */
    private function versionsGet(string $addr): ?array
    {
        if ($this->opts['metadataCache'] === 'apcu') {
            $v = apcu_fetch($this->cacheKey . 'v:' . $addr, $ok);
            return $ok && is_array($v) ? $v : null;
        }
        return self::$versions[$addr] ?? null;
    }

    /** @param array<int, array{0: int, 1: int}> $versions */
    private function versionsPut(string $addr, array $versions): void
    {
        if ($this->opts['metadataCache'] === 'apcu') {
            apcu_store($this->cacheKey . 'v:' . $addr, $versions, (int) ceil((float) $this->opts['metadataMaxAge']));
            return;
        }
        self::$versions[$addr] = $versions;
    }

    // ---- options and records ----

    private function checkOptions(): ?string
    {
        $o = $this->opts;
        if (!is_array($o['brokers']) || $o['brokers'] === []) {
            return "option 'brokers': want a list of host:port";
        }
        foreach ($o['brokers'] as $b) {
            if (!is_string($b) || !preg_match('/^(\[[0-9a-fA-F:.]+\]|[^\s:\/]+):\d{1,5}$/', $b)) {
                return "option 'brokers': " . json_encode($b) . ' is not host:port';
            }
        }
        if (!in_array($o['acks'], [-1, 0, 1], true)) {
            return "option 'acks': want -1, 0 or 1";
        }
        foreach (['timeout', 'connectTimeout', 'metadataMaxAge'] as $k) {
            if (!is_int($o[$k]) && !is_float($o[$k]) || $o[$k] <= 0) {
                return "option '$k': want a positive number of seconds";
            }
        }
        if (!in_array($o['metadataCache'], ['none', 'process', 'apcu'], true)) {
            return "option 'metadataCache': want 'none', 'process' or 'apcu'";
        }
        if (!is_bool($o['tls']) && !is_array($o['tls'])) {
            return "option 'tls': want false, true or an array of TLS settings";
        }
        if ($o['sasl'] !== null) {
            $m = is_array($o['sasl']) ? strtoupper((string) ($o['sasl']['mechanism'] ?? '')) : '';
            if (!in_array($m, ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'], true)) {
                return "option 'sasl': want ['mechanism' => 'PLAIN'|'SCRAM-SHA-256'|'SCRAM-SHA-512', 'username' => ..., 'password' => ...]";
            }
        }
        if ($o['onError'] !== null && !is_callable($o['onError'])) {
            return "option 'onError': not callable";
        }
        return null;
    }

    /**
     * Records as [topic, value, key, headers as [name, value] pairs].
     *
     * @param array<mixed> $records
     * @return list<array{0: string, 1: string, 2: ?string, 3: list<array{0: string, 1: ?string}>}>
     */
    private static function normalize(array $records): array
    {
        if ($records === []) {
            throw new KafkaException('no records');
        }
        $out = [];
        foreach (array_values($records) as $i => $r) {
            if (!is_array($r)) {
                throw new KafkaException("record $i: want [topic, value, key?, headers?]");
            }
            $topic = $r[0] ?? $r['topic'] ?? null;
            $value = $r[1] ?? $r['value'] ?? null;
            $key = $r[2] ?? $r['key'] ?? null;
            $headers = $r[3] ?? $r['headers'] ?? [];
            if (!is_string($topic) || !preg_match('/^[a-zA-Z0-9._-]{1,249}$/', $topic)) {
                throw new KafkaException("record $i: topic " . json_encode($topic) . ' is not a valid topic name');
            }
            if (!is_string($value)) {
                throw new KafkaException("record $i: the value must be a string");
            }
            if ($key !== null && !is_string($key)) {
                throw new KafkaException("record $i: the key must be a string or null");
            }
            if (!is_array($headers)) {
                throw new KafkaException("record $i: headers must be an array");
            }
            $pairs = [];
            foreach ($headers as $name => $hv) {
                if (is_int($name) && is_array($hv)) {
                    [$name, $hv] = [$hv[0] ?? null, $hv[1] ?? null];
                }
                if (!is_string($name) || (!is_string($hv) && $hv !== null)) {
                    throw new KafkaException("record $i: a header must be name => string value, or [name, value]");
                }
                $pairs[] = [$name, $hv];
            }
            $out[] = [$topic, $value, $key, $pairs];
        }
        return $out;
    }

    /**
     * @param array<string, array<int, list<int>>> $parts
     * @return list<int>
     */
    private static function indexes(array $parts): array
    {
        $all = [];
        foreach ($parts as $byPartition) {
            foreach ($byPartition as $idx) {
                array_push($all, ...$idx);
            }
        }
        return $all;
    }

    /** @param array<string, mixed> $context */
    private function report(string $message, array $context): void
    {
        $cb = $this->opts['onError'];
        if (is_callable($cb)) {
            try {
                $cb($message, $context);
            } catch (\Throwable $e) {
                if ($this->opts['errorLog']) {
                    error_log('EventLogging: onError callback failed: ' . $e->getMessage());
                }
            }
        }
        if ($this->opts['errorLog']) {
            error_log('EventLogging: ' . $message);
        }
    }
}
