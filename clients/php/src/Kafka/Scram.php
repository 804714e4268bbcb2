<?php

declare(strict_types=1);

namespace EventLogging\Kafka;

/**
 * The client side of SCRAM (RFC 5802, RFC 7677) for Kafka's
 * SCRAM-SHA-256 and SCRAM-SHA-512: no channel binding, no authzid.
 *
 * @internal
 */
final class Scram
{
    private string $algo;

    private string $clientNonce;

    private string $firstBare = '';

    private string $serverSignature = '';

    /** @var array<string, string> salted passwords already derived in this process */
    private static array $salted = [];

    public function __construct(string $mechanism, private string $user, private string $password, ?string $nonce = null)
    {
        $this->algo = match ($mechanism) {
            'SCRAM-SHA-256' => 'sha256',
            'SCRAM-SHA-512' => 'sha512',
            default => throw new KafkaException("unsupported SASL mechanism $mechanism"),
        };
        $this->clientNonce = $nonce ?? rtrim(strtr(base64_encode(random_bytes(24)), '+/', '-_'), '=');
    }

    /** The client-first message. */
    public function first(): string
    {
        $name = str_replace(['=', ','], ['=3D', '=2C'], $this->user);
        $this->firstBare = "n=$name,r={$this->clientNonce}";
        return 'n,,' . $this->firstBare;
    }

    /** The client-final message answering the server-first message. */
    public function final(string $serverFirst): string
    {
        $attrs = self::attributes($serverFirst);
        if (isset($attrs['e'])) {
            throw new KafkaException('SASL authentication failed: ' . $attrs['e']);
        }
        $nonce = $attrs['r'] ?? '';
        $salt = base64_decode($attrs['s'] ?? '', true);
        $iterations = (int) ($attrs['i'] ?? 0);
        if (!str_starts_with($nonce, $this->clientNonce) || $nonce === $this->clientNonce || $salt === false || $iterations < 1) {
            throw new KafkaException('SASL authentication failed: malformed SCRAM server-first message');
        }
        $memo = $this->algo . "\0" . $this->user . "\0" . $this->password . "\0" . $salt . "\0" . $iterations;
        $salted = self::$salted[$memo] ??= hash_pbkdf2($this->algo, $this->password, $salt, $iterations, 0, true);
        $clientKey = hash_hmac($this->algo, 'Client Key', $salted, true);
        $storedKey = hash($this->algo, $clientKey, true);
        $withoutProof = "c=biws,r=$nonce";
        $authMessage = $this->firstBare . ',' . $serverFirst . ',' . $withoutProof;
        $proof = $clientKey ^ hash_hmac($this->algo, $authMessage, $storedKey, true);
        $serverKey = hash_hmac($this->algo, 'Server Key', $salted, true);
        $this->serverSignature = hash_hmac($this->algo, $authMessage, $serverKey, true);
        return $withoutProof . ',p=' . base64_encode($proof);
    }

    /** Checks the server-final message: the server knew the password too. */
    public function verify(string $serverFinal): void
    {
        $attrs = self::attributes($serverFinal);
        if (isset($attrs['e'])) {
            throw new KafkaException('SASL authentication failed: ' . $attrs['e']);
        }
        $v = base64_decode($attrs['v'] ?? '', true);
        if ($v === false || !hash_equals($this->serverSignature, $v)) {
            throw new KafkaException('SASL authentication failed: the server\'s SCRAM signature does not match');
        }
    }

    /** @return array<string, string> */
    private static function attributes(string $msg): array
    {
        $out = [];
        foreach (explode(',', $msg) as $part) {
            if (strlen($part) >= 2 && $part[1] === '=') {
                $out[$part[0]] = substr($part, 2);
            }
        }
        return $out;
    }
}
