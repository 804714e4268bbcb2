<?php

// Loads the EventLogging client without Composer:
//
//     require '/path/to/clients/php/autoload.php';
//
// Classes are loaded on first use, so MonologHandler sees Monolog when an
// autoloader for it (Composer's) is registered, whichever comes first.

declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    $files = [
        'EventLogging\\EventLogging' => 'EventLogging.php',
        'EventLogging\\MonologHandler' => 'MonologHandler.php',
        'EventLogging\\MonologHandlerBase' => 'MonologHandler.php',
    ];
    if (isset($files[$class])) {
        require_once __DIR__ . '/src/' . $files[$class];
    }
});
