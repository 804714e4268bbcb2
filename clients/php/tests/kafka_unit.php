<?php

// Unit tests of the Kafka transport, without a broker:
//
//     php clients/php/tests/kafka_unit.php
//
// CRC-32C, murmur2 (Java's test vectors), varints, RecordBatch v2, SCRAM
// (RFC 7677's exchange), Avro encoding and its refusals, the producer's
// option checks and failures that never throw. Prints "ok: N checks" and
// exits 0, or prints the failures and exits 1. test/e2e/clients_php_kafka_test.go
// runs it; the same code against brokers is tested there.

declare(strict_types=1);

require __DIR__ . '/../autoload.php';

use EventLogging\Kafka\AvroException;
use EventLogging\Kafka\AvroSchema;
use EventLogging\Kafka\Crc32c;
use EventLogging\Kafka\KafkaException;
use EventLogging\Kafka\MonologHandler;
use EventLogging\Kafka\Murmur2;
use EventLogging\Kafka\Producer;
use EventLogging\Kafka\Reader;
use EventLogging\Kafka\RecordBatch;
use EventLogging\Kafka\Scram;
use EventLogging\Kafka\Wire;

ini_set('display_errors', 'stderr'); // a fatal error shows on stderr; the client's own reports go through onError

$checks = 0;
$failures = [];

function check(bool $ok, string $what): void
{
    global $checks, $failures;
    $checks++;
    if (!$ok) {
        $failures[] = $what;
    }
}

// CRC-32C: the check value of "123456789", RFC 3720's 32 zero bytes, and
// the table agreeing with PHP's hash('crc32c').
check(Crc32c::compute('123456789') === 0xe3069283, 'crc32c("123456789")');
check(Crc32c::compute(str_repeat("\0", 32)) === 0x8a9136aa, 'crc32c(32 zero bytes)');
check(Crc32c::compute('') === 0, 'crc32c("")');
for ($i = 0; $i < 50; $i++) {
    $s = random_bytes(mt_rand(1, 300));
    check(Crc32c::compute($s) === Crc32c::checksum($s), 'crc32c table = hash("crc32c") for ' . bin2hex($s));
}

// murmur2: the vectors of Kafka's UtilsTest.testMurmur2 (Java ints).
$javaInt = static fn (int $u): int => $u >= 0x80000000 ? $u - 0x100000000 : $u;
foreach ([
    '21' => -973932308,
    'foobar' => -790332482,
    'a-little-bit-long-string' => -985981536,
    'a-little-bit-longer-string' => -1486304829,
    'lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8' => -58897971,
    'abc' => 479470107,
] as $key => $want) {
    check($javaInt(Murmur2::hash((string) $key)) === $want, "murmur2($key) = $want, got " . $javaInt(Murmur2::hash((string) $key)));
}
check(Murmur2::partition('21', 3) === ((-973932308 & 0x7fffffff) % 3), 'partition = toPositive(murmur2) % n');

// Varints: zigzag round trips and known encodings.
foreach ([0 => '00', -1 => '01', 1 => '02', -64 => '7f', 64 => '8001', 300 => 'd804'] as $v => $hex) {
    check(bin2hex(Wire::varint($v)) === $hex, "varint($v) = $hex, got " . bin2hex(Wire::varint($v)));
}
foreach ([0, 1, -1, 2147483647, -2147483648, PHP_INT_MAX, PHP_INT_MIN, 1 << 40] as $v) {
    check((new Reader(Wire::varint($v)))->varint() === $v, "varint round trip $v");
}
check(bin2hex(Wire::int16(-1) . Wire::int32(-2) . Wire::int64(-3)) === 'fffffffffffefffffffffffffffd', 'two\'s complement integers');

// RecordBatch v2: what was encoded decodes, with a valid CRC.
$b = RecordBatch::encode([['v1', null, []], ['v2', 'k', [['h', 'x'], ['n', null]]], [str_repeat('z', 300), '', []]], 1700000000123);
$d = RecordBatch::decode($b);
check($d['crcOk'] && $d['magic'] === 2 && $d['timestamp'] === 1700000000123, 'batch header and CRC');
check(count($d['records']) === 3 && $d['records'][0][0] === 'v1' && $d['records'][0][1] === null, 'record without key');
check($d['records'][1][1] === 'k' && $d['records'][1][2] === [['h', 'x'], ['n', null]] && $d['records'][1][3] === 1, 'record with key and headers');
check($d['records'][2][0] === str_repeat('z', 300) && $d['records'][2][1] === '', 'long value, empty key');

// SCRAM-SHA-256: RFC 7677's example exchange.
$s = new Scram('SCRAM-SHA-256', 'user', 'pencil', 'rOprNGfwEbeRWgbNEkqO');
check($s->first() === 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO', 'SCRAM client-first');
$final = $s->final('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096');
check($final === 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=', "SCRAM client-final: $final");
try {
    $s->verify('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=');
    check(true, 'SCRAM server signature');
} catch (KafkaException $e) {
    check(false, 'SCRAM server signature: ' . $e->getMessage());
}
try {
    $s->verify('v=AAAA');
    check(false, 'SCRAM: a wrong server signature must be refused');
} catch (KafkaException $e) {
    check(str_contains($e->getMessage(), 'signature'), 'SCRAM wrong signature message');
}
$s2 = new Scram('SCRAM-SHA-512', 'a=b,c', 'p', 'nonce');
check($s2->first() === 'n,,n=a=3Db=2Cc,r=nonce', 'SCRAM escapes = and , in the user name');
try {
    $s2->final('r=nonce,s=c2FsdA==,i=4096'); // the server must add to the nonce
    check(false, 'SCRAM: a server nonce equal to the client\'s must be refused');
} catch (KafkaException) {
    check(true, '');
}

// Avro: known encodings.
$avro = static fn (string $schema, mixed $v): string => bin2hex(AvroSchema::parse($schema)->encode($v));
check($avro('"long"', 1) === '02' && $avro('"long"', -1) === '01' && $avro('"long"', 64) === '8001', 'Avro long');
check($avro('"int"', -2147483648) === 'ffffffff0f', 'Avro int min');
check($avro('"string"', 'foo') === '06666f6f', 'Avro string');
check($avro('"boolean"', true) === '01' && $avro('"null"', null) === '', 'Avro boolean, null');
check($avro('"double"', 1.0) === '000000000000f03f' && $avro('"float"', 1) === '0000803f', 'Avro double, float (from int)');
check($avro('{"type":"array","items":"long"}', [1, 2]) === '0402' . '04' . '00', 'Avro array');
check($avro('{"type":"array","items":"long"}', []) === '00', 'Avro empty array');
check($avro('{"type":"map","values":"long"}', ['k' => 1]) === '02026b0200', 'Avro map');
check($avro('{"type":"enum","name":"E","symbols":["A","B"]}', 'B') === '02', 'Avro enum');
check($avro('{"type":"fixed","name":"F","size":2}', "\x01\x02") === '0102', 'Avro fixed');
$rec = '{"type":"record","name":"R","namespace":"ns","fields":[{"name":"a","type":"long"},{"name":"b","type":["null","string"],"default":null},'
    . '{"name":"c","type":"string","default":"dflt"},{"name":"d","type":["null","long","double"]},{"name":"self","type":["null","R"],"default":null}]}';
check($avro($rec, ['a' => 1, 'b' => 'x', 'd' => 2]) === '02' . '0202' . '78' . '08' . '64666c74' . '0204' . '00', 'Avro record: union branches, defaults, missing nullable');
check($avro($rec, ['a' => 1, 'd' => 2.5, 'self' => ['a' => 2, 'd' => null]]) === '02' . '00' . '0864666c74' . '04' . '0000000000000440' . '02' . '04000864666c740000', 'Avro record: double branch, recursion');
$ts = '{"type":"long","logicalType":"timestamp-millis"}';
check(bin2hex(Wire::varint(1500)) === $avro($ts, new DateTimeImmutable('1970-01-01T00:00:01.5Z')), 'Avro timestamp-millis from DateTime');
check(bin2hex(Wire::varint(1500)) === $avro($ts, '1970-01-01T00:00:01.500Z'), 'Avro timestamp-millis from RFC 3339 text');

// Avro refusals name the field.
foreach ([
    [['a' => 'one', 'd' => 1], '/a', 'want long'],
    [['d' => 1], '/a', 'required field'],
    [['a' => 1, 'd' => 1, 'extra' => 1], '/extra', 'not a field'],
    [['a' => 1, 'd' => 'x'], '/d', 'fits no branch'],
    [['a' => 1, 'd' => 1, 'self' => ['a' => 1, 'b' => 7, 'd' => null]], '/self/b', 'fits no branch'],
] as [$value, $path, $reason]) {
    try {
        AvroSchema::parse($rec)->encode($value);
        check(false, "Avro must refuse " . json_encode($value));
    } catch (AvroException $e) {
        check($e->path === $path && str_contains($e->reason, $reason), "Avro refusal of " . json_encode($value) . ": {$e->getMessage()}");
    }
}
try {
    AvroSchema::parse('"int"')->encode(1 << 40);
    check(false, 'Avro int must refuse 2^40');
} catch (AvroException $e) {
    check(str_contains($e->reason, '32 bits'), 'Avro int range');
}
try {
    AvroSchema::parse('"string"')->encode("\xff");
    check(false, 'Avro string must refuse invalid UTF-8');
} catch (AvroException $e) {
    check(str_contains($e->reason, 'UTF-8'), 'Avro string UTF-8');
}

// Producer: bad options and unreachable brokers return false, reported, never thrown.
$errors = [];
$onError = function (string $m) use (&$errors): void {
    $errors[] = $m;
};
$p = new Producer(['brokers' => ['no-port'], 'onError' => $onError, 'errorLog' => false]);
check($p->send('t', 'v') === false && str_contains($p->lastResult()['error'], 'host:port') && count($errors) === 1, 'bad broker address: false, reported');
$p = new Producer(['brokers' => ['127.0.0.1:1'], 'acks' => 2, 'onError' => $onError, 'errorLog' => false]);
check($p->send('t', 'v') === false && str_contains($p->lastResult()['error'], "'acks'"), 'bad acks');
$p = new Producer(['brokers' => ['127.0.0.1:1'], 'bogus' => 1, 'errorLog' => false]);
check($p->send('t', 'v') === false && str_contains($p->lastResult()['error'], "unknown option 'bogus'"), 'unknown option');
try {
    new Producer(['brokers' => [], 'throw' => true]);
    check(false, 'throw => true: bad options throw');
} catch (KafkaException) {
    check(true, '');
}
$p = new Producer(['brokers' => ['127.0.0.1:1'], 'timeout' => 0.5, 'errorLog' => false]);
check($p->send('bad topic!', 'v') === false && str_contains($p->lastResult()['error'], 'not a valid topic name'), 'invalid topic name');
check($p->sendMany([['t', 42]]) === false && str_contains($p->lastResult()['error'], 'value must be a string'), 'non-string value');
$t0 = hrtime(true);
check($p->send('t', 'v') === false && str_contains($p->lastResult()['error'], 'connecting to 127.0.0.1:1'), 'refused connection: ' . $p->lastResult()['error']);
check((hrtime(true) - $t0) / 1e9 < 0.5, 'refused connection within the timeout');
$p = new Producer(['brokers' => ['127.0.0.1:1'], 'throw' => true]);
try {
    $p->send('t', 'v');
    check(false, 'throw => true: a failed send throws');
} catch (KafkaException $e) {
    check(str_contains($e->getMessage(), 'connecting'), 'thrown failure');
}

// Kafka MonologHandler: JSON by default; a record that does not encode is reported, never thrown.
$reported = [];
$h = new MonologHandler(['brokers' => ['127.0.0.1:1'], 'topics' => ['app' => 'app_logs'], 'level' => 'info', 'logExceptions' => false,
    'kafka' => ['timeout' => 0.3], 'onError' => function (string $m) use (&$reported): void {
        $reported[] = $m;
    }]);
check(!$h->isHandling(['level' => 100, 'channel' => 'app']) && $h->isHandling(['level' => 200, 'channel' => 'app']) && !$h->isHandling(['level' => 400, 'channel' => 'other']), 'level and channel filter');
$h->handle(['message' => 'm', 'context' => ['a' => 1, 'at' => new DateTimeImmutable('2026-01-02T03:04:05Z')], 'level' => 200, 'level_name' => 'INFO', 'channel' => 'app', 'extra' => []]);
$h->handle(['message' => 'm', 'context' => ['bad' => "\xff"], 'level' => 200, 'channel' => 'app']);
$h->handle(['message' => 'm', 'context' => [], 'level' => 200, 'channel' => 'app']);
check($h->pending() === 3, 'three records buffered');
$h->close();
check(count($reported) === 1 && str_contains($reported[0], 'could not produce 3 log record(s)'), 'failed produce reported: ' . json_encode($reported));
$h2 = new MonologHandler(['brokers' => ['127.0.0.1:1'], 'topics' => ['app' => 'app_logs'], 'subjects' => ['app' => 's'], 'logExceptions' => false, 'swallowExceptions' => false]);
$h2->handle(['message' => 'm', 'context' => [], 'level' => 200, 'channel' => 'app']);
try {
    $h2->close();
    check(false, 'swallowExceptions false: close throws');
} catch (KafkaException $e) {
    check(str_contains($e->getMessage(), "no 'registry'"), 'close throws the failure: ' . $e->getMessage());
}

if ($failures !== []) {
    echo 'FAIL: ' . count($failures) . " of $checks checks\n  " . implode("\n  ", $failures) . "\n";
    exit(1);
}
echo "ok: $checks checks\n";
