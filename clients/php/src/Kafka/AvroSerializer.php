<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

use EventLogging\EventLogging;

/**
 * Encodes values as Avro in the Confluent wire format (magic byte 0, the
 * schema's 4-byte big-endian id, Avro binary) with the latest schema of a
 * subject in a Confluent-compatible registry (the project's own:
 * GET {registry}/subjects/{subject}/versions/latest). The subject's id
 * and schema are fetched once per PHP process (and again after 'cacheTtl'
 * seconds); the registry is asked within 'timeout'.
 *
 *     $avro = new EventLogging\Kafka\AvroSerializer(['registry' => 'http://localhost:8080/registry']);
 *     $producer->send('app_logs', $avro->serialize('app_logs-value', ['message' => 'hi', 'level' => 'INFO']));
 *
 * serialize() throws: an AvroException (with the offending field's JSON
 * pointer) when the value does not fit the schema, a KafkaException when
 * the registry cannot tell the schema. Nothing is encoded in part.
 */
final class AvroSerializer
{
    /** @var array<string, mixed> */
    private const DEFAULTS = [
        // Base URL of the registry, e.g. http://localhost:8080/registry. Required.
        'registry' => null,
        // Seconds for one registry request.
        'timeout' => 1.0,
        // Seconds a subject's latest schema is reused in this process.
        'cacheTtl' => 300,
    ];

    /** @var array<string, mixed> */
    private array $opts;

    /** @var array<string, array{id: int, schema: AvroSchema, at: float}> by registry URL and subject */
    private static array $latest = [];

    /** @param array<string, mixed> $options */
    public function __construct(array $options)
    {
        foreach ($options as $k => $_) {
            if (!array_key_exists($k, self::DEFAULTS)) {
                throw new \InvalidArgumentException("AvroSerializer: unknown option '$k'");
            }
        }
        $this->opts = $options + self::DEFAULTS;
        if (!is_string($this->opts['registry']) || !preg_match('#^https?://#', $this->opts['registry'])) {
            throw new \InvalidArgumentException("AvroSerializer: option 'registry' must be the registry's http(s) URL");
        }
        $this->opts['registry'] = rtrim($this->opts['registry'], '/');
    }

    /**
     * $value in the Confluent wire format with $subject's latest schema.
     *
     * @param array<string, mixed> $value
     * @throws AvroException the value does not fit the schema
     * @throws KafkaException the registry could not give the schema
     */
    public function serialize(string $subject, array $value): string
    {
        [$id, $schema] = $this->latest($subject);
        try {
            return "\x00" . pack('N', $id) . $schema->encode($value);
        } catch (AvroException $e) {
            throw new AvroException($e->path, "$subject (schema id $id): " . $e->reason);
        }
    }

    /** The global id of $subject's latest schema. */
    public function schemaId(string $subject): int
    {
        return $this->latest($subject)[0];
    }

    /** Forgets the schemas cached in this process (tests). */
    public static function clearCache(): void
    {
        self::$latest = [];
    }

    /** @return array{0: int, 1: AvroSchema} */
    private function latest(string $subject): array
    {
        $key = $this->opts['registry'] . "\0" . $subject;
        $e = self::$latest[$key] ?? null;
        if ($e !== null && microtime(true) - $e['at'] < (float) $this->opts['cacheTtl']) {
            return [$e['id'], $e['schema']];
        }
        $url = $this->opts['registry'] . '/subjects/' . rawurlencode($subject) . '/versions/latest';
        $t = (float) $this->opts['timeout'];
        $answer = EventLogging::request('GET', $url, ['Accept: application/vnd.schemaregistry.v1+json, application/json'], '',
            ['timeout' => $t, 'connectTimeout' => $t, 'userAgent' => 'eventlogging-php-client/1']);
        if (isset($answer['error'])) {
            throw new KafkaException("schema registry: $subject: " . $answer['error']);
        }
        $body = json_decode($answer['body'], true);
        if ($answer['status'] !== 200 || !is_array($body) || !is_int($body['id'] ?? null) || !is_string($body['schema'] ?? null)) {
            $why = is_array($body) && isset($body['message']) ? $body['message'] . (isset($body['error_code']) ? " ({$body['error_code']})" : '') : substr($answer['body'], 0, 200);
            throw new KafkaException("schema registry: $subject: {$answer['status']} $why");
        }
        if (($body['schemaType'] ?? 'AVRO') !== 'AVRO') {
            throw new KafkaException("schema registry: the latest schema of $subject is {$body['schemaType']}, not Avro");
        }
        $schema = AvroSchema::parse($body['schema']);
        self::$latest[$key] = ['id' => $body['id'], 'schema' => $schema, 'at' => microtime(true)];
        return [$body['id'], $schema];
    }
}
