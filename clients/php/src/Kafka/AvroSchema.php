<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * An Avro schema (parsed from its JSON text) and the binary encoding of
 * PHP values with it: records, enums, arrays, maps, fixed, unions, the
 * primitive types, and the logical types timestamp-millis/-micros and
 * date (which also take a DateTimeInterface or an RFC 3339 string). A value
 * that does not fit is an AvroException naming its JSON pointer
 * ("/context/user_id"); nothing is half-encoded.
 *
 * The mapping from PHP: null; bool; int for int and long (int checked
 * against 32 bits), int or float for float and double; string for
 * string, bytes, fixed (its exact size) and enum (one of its symbols);
 * a list for an array; an associative array or object for a record (a
 * missing field takes its default, or null when its type is a union with
 * null; a key that is not a field is refused) and for a map. A union takes
 * the first branch of the value's own type, else the first it fits.
 */
final class AvroSchema
{
    private const PRIMITIVES = ['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string'];

    /** @var array<string, array<string, mixed>> named types by full name */
    private array $named = [];

    /** @var array<string, mixed> */
    private array $root;

    private function __construct()
    {
    }

    /** Parses the schema's JSON text; a malformed schema is an AvroException. */
    public static function parse(string $json): self
    {
        try {
            $decoded = json_decode($json, true, 512, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw new AvroException('', 'the schema is not JSON: ' . $e->getMessage());
        }
        $s = new self();
        $s->root = $s->node($decoded, '');
        return $s;
    }

    /**
     * The Avro binary encoding of $value.
     *
     * @throws AvroException
     */
    public function encode(mixed $value): string
    {
        $out = '';
        $this->write($this->root, $value, '', $out);
        return $out;
    }

    // ---- parsing ----

    /** @return array<string, mixed> */
    private function node(mixed $s, string $ns): array
    {
        if (is_string($s)) {
            if (in_array($s, self::PRIMITIVES, true)) {
                return ['type' => $s];
            }
            return ['type' => 'ref', 'name' => self::fullName($s, $ns)];
        }
        if (is_array($s) && array_is_list($s)) {
            $branches = [];
            foreach ($s as $b) {
                $branches[] = $this->node($b, $ns);
            }
            return ['type' => 'union', 'branches' => $branches];
        }
        if (!is_array($s) || !isset($s['type'])) {
            throw new AvroException('', 'malformed schema: ' . json_encode($s));
        }
        $type = $s['type'];
        if (is_array($type)) {
            return $this->node($type, $ns);
        }
        switch ($type) {
            case 'record':
            case 'error':
                $full = self::fullName((string) ($s['name'] ?? ''), (string) ($s['namespace'] ?? $ns));
                // Fields may name this record (recursion): references are
                // resolved by name when a value is encoded.
                $node = ['type' => 'record', 'name' => $full, 'fields' => []];
                $inner = self::namespaceOf($full);
                foreach ($s['fields'] ?? [] as $f) {
                    if (!is_array($f) || !isset($f['name'], $f['type'])) {
                        throw new AvroException('', "malformed field in record $full");
                    }
                    $node['fields'][] = [
                        'name' => (string) $f['name'],
                        'node' => $this->node($f['type'], $inner),
                        'hasDefault' => array_key_exists('default', $f),
                        'default' => $f['default'] ?? null,
                    ];
                }
                $this->named[$full] = $node;
                return ['type' => 'ref', 'name' => $full];
            case 'enum':
                $full = self::fullName((string) ($s['name'] ?? ''), (string) ($s['namespace'] ?? $ns));
                $this->named[$full] = ['type' => 'enum', 'name' => $full, 'symbols' => array_values(array_map('strval', $s['symbols'] ?? []))];
                return ['type' => 'ref', 'name' => $full];
            case 'fixed':
                $full = self::fullName((string) ($s['name'] ?? ''), (string) ($s['namespace'] ?? $ns));
                $this->named[$full] = ['type' => 'fixed', 'name' => $full, 'size' => (int) ($s['size'] ?? 0)];
                return ['type' => 'ref', 'name' => $full];
            case 'array':
                return ['type' => 'array', 'items' => $this->node($s['items'] ?? null, $ns)];
            case 'map':
                return ['type' => 'map', 'values' => $this->node($s['values'] ?? null, $ns)];
            default:
                if (in_array($type, self::PRIMITIVES, true)) {
                    return ['type' => $type, 'logical' => is_string($s['logicalType'] ?? null) ? $s['logicalType'] : null];
                }
                return ['type' => 'ref', 'name' => self::fullName((string) $type, $ns)];
        }
    }

    private static function fullName(string $name, string $ns): string
    {
        if ($name === '') {
            throw new AvroException('', 'malformed schema: a named type without a name');
        }
        return str_contains($name, '.') || $ns === '' ? $name : "$ns.$name";
    }

    private static function namespaceOf(string $full): string
    {
        $p = strrpos($full, '.');
        return $p === false ? '' : substr($full, 0, $p);
    }

    /** @param array<string, mixed> $n @return array<string, mixed> */
    private function resolve(array $n): array
    {
        if ($n['type'] !== 'ref') {
            return $n;
        }
        if (!isset($this->named[$n['name']])) {
            throw new AvroException('', "malformed schema: unknown type {$n['name']}");
        }
        return $this->named[$n['name']];
    }

    // ---- encoding ----

    /** @param array<string, mixed> $n */
    private function write(array $n, mixed $v, string $path, string &$out): void
    {
        $n = $this->resolve($n);
        switch ($n['type']) {
            case 'null':
                if ($v !== null) {
                    throw self::misfit($path, 'null', $v);
                }
                return;
            case 'boolean':
                if (!is_bool($v)) {
                    throw self::misfit($path, 'boolean', $v);
                }
                $out .= $v ? "\x01" : "\x00";
                return;
            case 'int':
            case 'long':
                $i = self::integer($n, $v, $path);
                if ($n['type'] === 'int' && ($i < -2147483648 || $i > 2147483647)) {
                    throw new AvroException($path, "$i does not fit Avro int (32 bits)");
                }
                $out .= Wire::varint($i);
                return;
            case 'float':
            case 'double':
                if (!is_float($v) && !is_int($v)) {
                    throw self::misfit($path, $n['type'], $v);
                }
                $out .= pack($n['type'] === 'float' ? 'g' : 'e', (float) $v);
                return;
            case 'string':
                if (!is_string($v)) {
                    throw self::misfit($path, 'string', $v);
                }
                if (!preg_match('//u', $v)) {
                    throw new AvroException($path, 'not valid UTF-8, as an Avro string must be');
                }
                $out .= Wire::varint(strlen($v)) . $v;
                return;
            case 'bytes':
                if (!is_string($v)) {
                    throw self::misfit($path, 'bytes', $v);
                }
                $out .= Wire::varint(strlen($v)) . $v;
                return;
            case 'fixed':
                if (!is_string($v) || strlen($v) !== $n['size']) {
                    throw new AvroException($path, "want a string of exactly {$n['size']} bytes (fixed {$n['name']})");
                }
                $out .= $v;
                return;
            case 'enum':
                $i = is_string($v) ? array_search($v, $n['symbols'], true) : false;
                if ($i === false) {
                    throw new AvroException($path, json_encode($v) . " is not a symbol of enum {$n['name']} (" . implode(', ', $n['symbols']) . ')');
                }
                $out .= Wire::varint($i);
                return;
            case 'array':
                if (!is_array($v) || !array_is_list($v)) {
                    throw self::misfit($path, 'array (a list)', $v);
                }
                if ($v !== []) {
                    $out .= Wire::varint(count($v));
                    foreach ($v as $k => $item) {
                        $this->write($n['items'], $item, "$path/$k", $out);
                    }
                }
                $out .= "\x00";
                return;
            case 'map':
                if (is_object($v) && !$v instanceof \DateTimeInterface) {
                    $v = get_object_vars($v);
                }
                if (!is_array($v) || ($v !== [] && array_is_list($v))) {
                    throw self::misfit($path, 'map (an associative array)', $v);
                }
                if ($v !== []) {
                    $out .= Wire::varint(count($v));
                    foreach ($v as $k => $item) {
                        $k = (string) $k;
                        $out .= Wire::varint(strlen($k)) . $k;
                        $this->write($n['values'], $item, $path . '/' . self::escape($k), $out);
                    }
                }
                $out .= "\x00";
                return;
            case 'record':
                if (is_object($v) && !$v instanceof \DateTimeInterface) {
                    $v = get_object_vars($v);
                }
                if (!is_array($v) || ($v !== [] && array_is_list($v))) {
                    throw self::misfit($path, "record {$n['name']} (an associative array)", $v);
                }
                $known = [];
                foreach ($n['fields'] as $f) {
                    $known[$f['name']] = true;
                    $fp = $path . '/' . self::escape($f['name']);
                    if (array_key_exists($f['name'], $v)) {
                        $this->write($f['node'], $v[$f['name']], $fp, $out);
                    } elseif ($f['hasDefault']) {
                        $this->writeDefault($f['node'], $f['default'], $fp, $out);
                    } elseif ($this->nullable($f['node'])) {
                        $this->write($f['node'], null, $fp, $out);
                    } else {
                        throw new AvroException($fp, "required field of record {$n['name']} missing");
                    }
                }
                foreach ($v as $k => $_) {
                    if (!isset($known[(string) $k])) {
                        throw new AvroException($path . '/' . self::escape((string) $k), "not a field of record {$n['name']}");
                    }
                }
                return;
            case 'union':
                $i = $this->branch($n['branches'], $v);
                if ($i === null) {
                    $names = implode(', ', array_map(fn (array $b): string => $this->resolve($b)['name'] ?? $this->resolve($b)['type'], $n['branches']));
                    throw new AvroException($path, self::describe($v) . " fits no branch of the union [$names]");
                }
                $out .= Wire::varint($i);
                $this->write($n['branches'][$i], $v, $path, $out);
                return;
        }
        throw new AvroException($path, "unsupported Avro type {$n['type']}");
    }

    /** A field's default: JSON, of the type of a union's first branch. */
    private function writeDefault(array $n, mixed $default, string $path, string &$out): void
    {
        $r = $this->resolve($n);
        if ($r['type'] === 'union') {
            $out .= "\x00";
            $this->writeDefault($r['branches'][0], $default, $path, $out);
            return;
        }
        if ($r['type'] === 'bytes' || $r['type'] === 'fixed') {
            // JSON defaults of bytes are strings of code points 0-255.
            $default = is_string($default) ? self::latin1($default) : $default;
        }
        if (in_array($r['type'], ['float', 'double'], true) && is_int($default)) {
            $default = (float) $default;
        }
        $this->write($r, $default, $path, $out);
    }

    /** The bytes of a JSON string of code points 0-255 (no mbstring needed). */
    private static function latin1(string $utf8): string
    {
        $out = '';
        foreach (preg_split('//u', $utf8, -1, PREG_SPLIT_NO_EMPTY) ?: [] as $ch) {
            $out .= strlen($ch) === 1 ? $ch : chr(((ord($ch[0]) & 0x1f) << 6 | (ord($ch[1]) & 0x3f)) & 0xff);
        }
        return $out;
    }

    /** @param array<string, mixed> $n */
    private function nullable(array $n): bool
    {
        $r = $this->resolve($n);
        if ($r['type'] !== 'union') {
            return false;
        }
        foreach ($r['branches'] as $b) {
            if ($this->resolve($b)['type'] === 'null') {
                return true;
            }
        }
        return false;
    }

    /**
     * The branch of a union for $v: the first whose type is exactly $v's,
     * else the first $v fits.
     *
     * @param list<array<string, mixed>> $branches
     */
    private function branch(array $branches, mixed $v): ?int
    {
        foreach ([true, false] as $strict) {
            foreach ($branches as $i => $b) {
                if ($this->fits($this->resolve($b), $v, $strict)) {
                    return $i;
                }
            }
        }
        return null;
    }

    /** @param array<string, mixed> $n */
    private function fits(array $n, mixed $v, bool $strict): bool
    {
        $assoc = (is_array($v) && ($v === [] || !array_is_list($v))) || (is_object($v) && !$v instanceof \DateTimeInterface);
        return match ($n['type']) {
            'null' => $v === null,
            'boolean' => is_bool($v),
            'int' => is_int($v) && $v >= -2147483648 && $v <= 2147483647 || (!$strict && self::isTime($n, $v)),
            'long' => is_int($v) || (!$strict && self::isTime($n, $v)),
            'float', 'double' => is_float($v) || (!$strict && is_int($v)),
            'string' => is_string($v),
            'bytes' => !$strict && is_string($v),
            'fixed' => is_string($v) && strlen($v) === $n['size'],
            'enum' => is_string($v) && in_array($v, $n['symbols'], true),
            'array' => is_array($v) && array_is_list($v),
            'map' => $assoc && !$strict,
            'record' => $assoc && $this->recordFits($n, $v),
            default => false,
        };
    }

    /** Whether every key of $v names a field of record $n (for unions of records). */
    private function recordFits(array $n, mixed $v): bool
    {
        $fields = array_column($n['fields'], 'name');
        foreach (is_object($v) ? get_object_vars($v) : $v as $k => $_) {
            if (!in_array((string) $k, $fields, true)) {
                return false;
            }
        }
        return true;
    }

    private static function isTime(array $n, mixed $v): bool
    {
        return in_array($n['logical'] ?? null, ['timestamp-millis', 'timestamp-micros', 'date', 'local-timestamp-millis', 'local-timestamp-micros'], true)
            && ($v instanceof \DateTimeInterface || is_string($v));
    }

    /** An int, or a time for the logical types of int and long. */
    private static function integer(array $n, mixed $v, string $path): int
    {
        if (is_int($v)) {
            return $v;
        }
        $logical = $n['logical'] ?? null;
        if (is_string($v) && in_array($logical, ['timestamp-millis', 'timestamp-micros', 'date', 'local-timestamp-millis', 'local-timestamp-micros'], true)) {
            try {
                $v = new \DateTimeImmutable($v, new \DateTimeZone('UTC'));
            } catch (\Exception) {
                throw new AvroException($path, json_encode($v) . " is not a time ($logical)");
            }
        }
        if ($v instanceof \DateTimeInterface) {
            return match ($logical) {
                'timestamp-millis', 'local-timestamp-millis' => (int) $v->format('Uv'),
                'timestamp-micros', 'local-timestamp-micros' => (int) $v->format('Uu'),
                'date' => (int) floor($v->getTimestamp() / 86400),
                default => throw self::misfit($path, $n['type'], $v),
            };
        }
        throw self::misfit($path, $n['type'] . ($logical !== null ? " ($logical)" : ''), $v);
    }

    private static function misfit(string $path, string $want, mixed $v): AvroException
    {
        return new AvroException($path, 'got ' . self::describe($v) . ", want $want");
    }

    private static function describe(mixed $v): string
    {
        return match (true) {
            $v === null => 'null',
            is_bool($v) => 'boolean',
            is_int($v) => 'integer',
            is_float($v) => 'number',
            is_string($v) => 'string',
            is_array($v) => array_is_list($v) && $v !== [] ? 'list' : 'associative array',
            default => get_debug_type($v),
        };
    }

    /** A JSON pointer token (RFC 6901). */
    private static function escape(string $k): string
    {
        return str_replace(['~', '/'], ['~0', '~1'], $k);
    }
}
