<?php

// Loads the EventLogging client without Composer:
//
//     require '/path/to/clients/php/autoload.php';
//
// Classes are loaded on first use, so MonologHandler sees Monolog when an
// autoloader for it (Composer's) is registered, whichever comes first.
// EventLogging\Kafka\X (the Kafka transport) is src/Kafka/X.php.

declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    $files = [
        'EventLogging\\EventLogging' => 'EventLogging.php',
        'EventLogging\\MonologHandler' => 'MonologHandler.php',
        'EventLogging\\MonologHandlerBase' => 'MonologHandler.php',
        'EventLogging\\Kafka\\MonologHandler' => 'Kafka/MonologHandler.php',
        'EventLogging\\Kafka\\MonologHandlerBase' => 'Kafka/MonologHandler.php',
    ];
    if (isset($files[$class])) {
        require_once __DIR__ . '/src/' . $files[$class];
        return;
    }
    if (str_starts_with($class, 'EventLogging\\Kafka\\')) {
        $name = substr($class, strlen('EventLogging\\Kafka\\'));
        if (preg_match('/^[A-Za-z0-9]+$/', $name) && is_file(__DIR__ . "/src/Kafka/$name.php")) {
            require_once __DIR__ . "/src/Kafka/$name.php";
        }
    }
});
