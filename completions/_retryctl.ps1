
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'retryctl' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'retryctl'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'retryctl' {
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Parse, validate and lint documents offline (what each check means: docs/policies.md)')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create every document of the files (fails on an existing name), or a queue from flags')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'Show retry policies or queues')
            [CompletionResult]::new('update', 'update', [CompletionResultType]::ParameterValue, 'Replace existing resources from files, or change a queue in place')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Create or update every document of the files')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Show how the files differ from the server (exit 0 same, 1 different)')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete retry policies or queues')
            [CompletionResult]::new('simulate', 'simulate', [CompletionResultType]::ParameterValue, 'Replay failure histories through the retry evaluator')
            [CompletionResult]::new('tune', 'tune', [CompletionResultType]::ParameterValue, 'Search retry-policy candidates on a history: which policy should this cluster run?')
            [CompletionResult]::new('suggest', 'suggest', [CompletionResultType]::ParameterValue, 'Learn a retry policy from the cluster''s own failures, and prove it on the same history')
            [CompletionResult]::new('merge', 'merge', [CompletionResultType]::ParameterValue, 'Add up a sharded simulate, tune or suggest (`--shard I/N -o partial`) into one answer')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run a local Armada-compatible API server with SQLite storage')
            [CompletionResult]::new('completion', 'completion', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Show or change the armadactl config file')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print the client version, and the server''s dialect when it is reachable')
            [CompletionResult]::new('describe', 'describe', [CompletionResultType]::ParameterValue, 'Explain a retry policy or queue in words: limits, backoff schedule, who uses it')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Document the fields of a resource (`retrypolicy.spec.rules`)')
            [CompletionResult]::new('schema', 'schema', [CompletionResultType]::ParameterValue, 'Print the JSON Schema (draft 2020-12) of a document kind, for editors')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Export a real cluster''s failure history from Armada''s Lookout as FailureHistory documents')
            [CompletionResult]::new('watch', 'watch', [CompletionResultType]::ParameterValue, 'Today''s policy and candidates on Lookout''s live record, as Prometheus metrics')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;validate' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Report format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Report format')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: warn about limits above its globalMaxRetries and a defaultPolicyName missing from the documents')
            [CompletionResult]::new('--categorizer', '--categorizer', [CompletionResultType]::ParameterName, 'The executor''s categorizer config (as -f would read it): also warn about policy rules on categories it never assigns, and Retry rules on categories whose pod it keeps')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'Treat warnings as errors')
            [CompletionResult]::new('--upstream', '--upstream', [CompletionResultType]::ParameterName, 'Check for an upstream Armada server: report as errors exactly the fields `create` against such a server refuses')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;create' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Create a queue from flags')
            [CompletionResult]::new('queues', 'queues', [CompletionResultType]::ParameterValue, 'Create a queue from flags')
            [CompletionResult]::new('q', 'q', [CompletionResultType]::ParameterValue, 'Create a queue from flags')
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Create retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('retry-policy', 'retry-policy', [CompletionResultType]::ParameterValue, 'Create retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('retrypolicies', 'retrypolicies', [CompletionResultType]::ParameterValue, 'Create retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('retry-policies', 'retry-policies', [CompletionResultType]::ParameterValue, 'Create retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('rp', 'rp', [CompletionResultType]::ParameterValue, 'Create retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;create;queue' {
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list')
            [CompletionResult]::new('--priority-factor', '--priority-factor', [CompletionResultType]::ParameterName, 'Priority factor (at least 1.0)')
            [CompletionResult]::new('--owner', '--owner', [CompletionResultType]::ParameterName, 'User owner (repeatable, or comma separated)')
            [CompletionResult]::new('--group-owner', '--group-owner', [CompletionResultType]::ParameterName, 'Group owner (repeatable, or comma separated)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--cordon', '--cordon', [CompletionResultType]::ParameterName, 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;create;queues' {
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list')
            [CompletionResult]::new('--priority-factor', '--priority-factor', [CompletionResultType]::ParameterName, 'Priority factor (at least 1.0)')
            [CompletionResult]::new('--owner', '--owner', [CompletionResultType]::ParameterName, 'User owner (repeatable, or comma separated)')
            [CompletionResult]::new('--group-owner', '--group-owner', [CompletionResultType]::ParameterName, 'Group owner (repeatable, or comma separated)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--cordon', '--cordon', [CompletionResultType]::ParameterName, 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;create;q' {
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list')
            [CompletionResult]::new('--priority-factor', '--priority-factor', [CompletionResultType]::ParameterName, 'Priority factor (at least 1.0)')
            [CompletionResult]::new('--owner', '--owner', [CompletionResultType]::ParameterName, 'User owner (repeatable, or comma separated)')
            [CompletionResult]::new('--group-owner', '--group-owner', [CompletionResultType]::ParameterName, 'Group owner (repeatable, or comma separated)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--cordon', '--cordon', [CompletionResultType]::ParameterName, 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;create;retrypolicy' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;create;retry-policy' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;create;retrypolicies' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;create;retry-policies' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;create;rp' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;create;help' {
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Create a queue from flags')
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Create retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;create;help;queue' {
            break
        }
        'retryctl;create;help;retrypolicy' {
            break
        }
        'retryctl;create;help;help' {
            break
        }
        'retryctl;get' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,..')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,..')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`')
            [CompletionResult]::new('--sort-by', '--sort-by', [CompletionResultType]::ParameterName, 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Read what the cluster stores, read-only, from Lookout''s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables and custom columns')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Retry policies: one or more by name, or all')
            [CompletionResult]::new('retry-policy', 'retry-policy', [CompletionResultType]::ParameterValue, 'Retry policies: one or more by name, or all')
            [CompletionResult]::new('retrypolicies', 'retrypolicies', [CompletionResultType]::ParameterValue, 'Retry policies: one or more by name, or all')
            [CompletionResult]::new('retry-policies', 'retry-policies', [CompletionResultType]::ParameterValue, 'Retry policies: one or more by name, or all')
            [CompletionResult]::new('rp', 'rp', [CompletionResultType]::ParameterValue, 'Retry policies: one or more by name, or all')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Queues: one or more by name, or all')
            [CompletionResult]::new('queues', 'queues', [CompletionResultType]::ParameterValue, 'Queues: one or more by name, or all')
            [CompletionResult]::new('q', 'q', [CompletionResultType]::ParameterValue, 'Queues: one or more by name, or all')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;get;retrypolicy' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server''s, v1beta1 from today''s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1')
            [CompletionResult]::new('--sort-by', '--sort-by', [CompletionResultType]::ParameterName, 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Read what the cluster stores, read-only, from Lookout''s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables and custom columns')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;get;retry-policy' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server''s, v1beta1 from today''s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1')
            [CompletionResult]::new('--sort-by', '--sort-by', [CompletionResultType]::ParameterName, 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Read what the cluster stores, read-only, from Lookout''s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables and custom columns')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;get;retrypolicies' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server''s, v1beta1 from today''s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1')
            [CompletionResult]::new('--sort-by', '--sort-by', [CompletionResultType]::ParameterName, 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Read what the cluster stores, read-only, from Lookout''s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables and custom columns')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;get;retry-policies' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server''s, v1beta1 from today''s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1')
            [CompletionResult]::new('--sort-by', '--sort-by', [CompletionResultType]::ParameterName, 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Read what the cluster stores, read-only, from Lookout''s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables and custom columns')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;get;rp' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server''s, v1beta1 from today''s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1')
            [CompletionResult]::new('--sort-by', '--sort-by', [CompletionResultType]::ParameterName, 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Read what the cluster stores, read-only, from Lookout''s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables and custom columns')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;get;queue' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server''s, v1beta1 from today''s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1')
            [CompletionResult]::new('--sort-by', '--sort-by', [CompletionResultType]::ParameterName, 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Read what the cluster stores, read-only, from Lookout''s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables and custom columns')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;get;queues' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server''s, v1beta1 from today''s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1')
            [CompletionResult]::new('--sort-by', '--sort-by', [CompletionResultType]::ParameterName, 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Read what the cluster stores, read-only, from Lookout''s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables and custom columns')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;get;q' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl''s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server''s, v1beta1 from today''s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1')
            [CompletionResult]::new('--sort-by', '--sort-by', [CompletionResultType]::ParameterName, 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Read what the cluster stores, read-only, from Lookout''s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--no-headers', '--no-headers', [CompletionResultType]::ParameterName, 'Leave out the header line of tables and custom columns')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;get;help' {
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Retry policies: one or more by name, or all')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Queues: one or more by name, or all')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;get;help;retrypolicy' {
            break
        }
        'retryctl;get;help;queue' {
            break
        }
        'retryctl;get;help;help' {
            break
        }
        'retryctl;update' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Change a queue in place: flags not given keep their values')
            [CompletionResult]::new('queues', 'queues', [CompletionResultType]::ParameterValue, 'Change a queue in place: flags not given keep their values')
            [CompletionResult]::new('q', 'q', [CompletionResultType]::ParameterValue, 'Change a queue in place: flags not given keep their values')
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Replace retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('retry-policy', 'retry-policy', [CompletionResultType]::ParameterValue, 'Replace retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('retrypolicies', 'retrypolicies', [CompletionResultType]::ParameterValue, 'Replace retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('retry-policies', 'retry-policies', [CompletionResultType]::ParameterValue, 'Replace retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('rp', 'rp', [CompletionResultType]::ParameterValue, 'Replace retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;update;queue' {
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list')
            [CompletionResult]::new('--priority-factor', '--priority-factor', [CompletionResultType]::ParameterName, 'Priority factor (at least 1.0)')
            [CompletionResult]::new('--owner', '--owner', [CompletionResultType]::ParameterName, 'User owner (repeatable, or comma separated)')
            [CompletionResult]::new('--group-owner', '--group-owner', [CompletionResultType]::ParameterName, 'Group owner (repeatable, or comma separated)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--cordon', '--cordon', [CompletionResultType]::ParameterName, 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--add-retry-policy', '--add-retry-policy', [CompletionResultType]::ParameterName, 'Attach a retry policy at the end of the list (repeatable, or comma separated)')
            [CompletionResult]::new('--remove-retry-policy', '--remove-retry-policy', [CompletionResultType]::ParameterName, 'Detach a retry policy (repeatable, or comma separated)')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;update;queues' {
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list')
            [CompletionResult]::new('--priority-factor', '--priority-factor', [CompletionResultType]::ParameterName, 'Priority factor (at least 1.0)')
            [CompletionResult]::new('--owner', '--owner', [CompletionResultType]::ParameterName, 'User owner (repeatable, or comma separated)')
            [CompletionResult]::new('--group-owner', '--group-owner', [CompletionResultType]::ParameterName, 'Group owner (repeatable, or comma separated)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--cordon', '--cordon', [CompletionResultType]::ParameterName, 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--add-retry-policy', '--add-retry-policy', [CompletionResultType]::ParameterName, 'Attach a retry policy at the end of the list (repeatable, or comma separated)')
            [CompletionResult]::new('--remove-retry-policy', '--remove-retry-policy', [CompletionResultType]::ParameterName, 'Detach a retry policy (repeatable, or comma separated)')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;update;q' {
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list')
            [CompletionResult]::new('--priority-factor', '--priority-factor', [CompletionResultType]::ParameterName, 'Priority factor (at least 1.0)')
            [CompletionResult]::new('--owner', '--owner', [CompletionResultType]::ParameterName, 'User owner (repeatable, or comma separated)')
            [CompletionResult]::new('--group-owner', '--group-owner', [CompletionResultType]::ParameterName, 'Group owner (repeatable, or comma separated)')
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Label `key=value` (repeatable)')
            [CompletionResult]::new('--cordon', '--cordon', [CompletionResultType]::ParameterName, 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--add-retry-policy', '--add-retry-policy', [CompletionResultType]::ParameterName, 'Attach a retry policy at the end of the list (repeatable, or comma separated)')
            [CompletionResult]::new('--remove-retry-policy', '--remove-retry-policy', [CompletionResultType]::ParameterName, 'Detach a retry policy (repeatable, or comma separated)')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;update;retrypolicy' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;update;retry-policy' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;update;retrypolicies' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;update;retry-policies' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;update;rp' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;update;help' {
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Change a queue in place: flags not given keep their values')
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Replace retry policies from files (only RetryPolicy documents are accepted)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;update;help;queue' {
            break
        }
        'retryctl;update;help;retrypolicy' {
            break
        }
        'retryctl;update;help;help' {
            break
        }
        'retryctl;apply' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--categorizer', '--categorizer', [CompletionResultType]::ParameterName, 'The executor''s categorizer config as it will be deployed: refuse (exit 1, nothing sent) a policy naming a category it never assigns (roll out the executor config first)')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--prune', '--prune', [CompletionResultType]::ParameterName, 'Also delete the retry policies on the server that no file names (as `diff` lists them); refused, deleting nothing, while a queue still uses one')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Apply a file `suggest -o policy` headed `# verdict: reject`, which is refused (exit 1, nothing sent) without it')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;diff' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'Dialect both sides of a retry policy are shown in: `armadaproject.io/v1` or `armadaproject.io/v1beta1` (today''s Armada)')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;delete' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--ignore-not-found', '--ignore-not-found', [CompletionResultType]::ParameterName, 'Succeed when a name does not exist')
            [CompletionResult]::new('--detach', '--detach', [CompletionResultType]::ParameterName, 'Detach a policy from every queue that uses it, then delete it')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Delete retry policies. A policy still attached to queues is refused unless --detach')
            [CompletionResult]::new('retry-policy', 'retry-policy', [CompletionResultType]::ParameterValue, 'Delete retry policies. A policy still attached to queues is refused unless --detach')
            [CompletionResult]::new('retrypolicies', 'retrypolicies', [CompletionResultType]::ParameterValue, 'Delete retry policies. A policy still attached to queues is refused unless --detach')
            [CompletionResult]::new('retry-policies', 'retry-policies', [CompletionResultType]::ParameterValue, 'Delete retry policies. A policy still attached to queues is refused unless --detach')
            [CompletionResult]::new('rp', 'rp', [CompletionResultType]::ParameterValue, 'Delete retry policies. A policy still attached to queues is refused unless --detach')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Delete queues')
            [CompletionResult]::new('queues', 'queues', [CompletionResultType]::ParameterValue, 'Delete queues')
            [CompletionResult]::new('q', 'q', [CompletionResultType]::ParameterValue, 'Delete queues')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;delete;retrypolicy' {
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--ignore-not-found', '--ignore-not-found', [CompletionResultType]::ParameterName, 'Succeed when a name does not exist')
            [CompletionResult]::new('--detach', '--detach', [CompletionResultType]::ParameterName, 'Detach the policy from every queue that uses it, then delete it')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;delete;retry-policy' {
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--ignore-not-found', '--ignore-not-found', [CompletionResultType]::ParameterName, 'Succeed when a name does not exist')
            [CompletionResult]::new('--detach', '--detach', [CompletionResultType]::ParameterName, 'Detach the policy from every queue that uses it, then delete it')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;delete;retrypolicies' {
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--ignore-not-found', '--ignore-not-found', [CompletionResultType]::ParameterName, 'Succeed when a name does not exist')
            [CompletionResult]::new('--detach', '--detach', [CompletionResultType]::ParameterName, 'Detach the policy from every queue that uses it, then delete it')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;delete;retry-policies' {
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--ignore-not-found', '--ignore-not-found', [CompletionResultType]::ParameterName, 'Succeed when a name does not exist')
            [CompletionResult]::new('--detach', '--detach', [CompletionResultType]::ParameterName, 'Detach the policy from every queue that uses it, then delete it')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;delete;rp' {
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--ignore-not-found', '--ignore-not-found', [CompletionResultType]::ParameterName, 'Succeed when a name does not exist')
            [CompletionResult]::new('--detach', '--detach', [CompletionResultType]::ParameterName, 'Detach the policy from every queue that uses it, then delete it')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;delete;queue' {
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--ignore-not-found', '--ignore-not-found', [CompletionResultType]::ParameterName, 'Succeed when a name does not exist')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;delete;queues' {
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--ignore-not-found', '--ignore-not-found', [CompletionResultType]::ParameterName, 'Succeed when a name does not exist')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;delete;q' {
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`client`: validate offline, send nothing; `server`: let the server validate only')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--ignore-not-found', '--ignore-not-found', [CompletionResultType]::ParameterName, 'Succeed when a name does not exist')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;delete;help' {
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Delete retry policies. A policy still attached to queues is refused unless --detach')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Delete queues')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;delete;help;retrypolicy' {
            break
        }
        'retryctl;delete;help;queue' {
            break
        }
        'retryctl;delete;help;help' {
            break
        }
        'retryctl;simulate' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--history', '--history', [CompletionResultType]::ParameterName, 'A FailureHistory file, a JSON Lines file of histories, a directory of them, or `-`')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Replay a real cluster''s history straight from Lookout''s PostgreSQL database (as `retryctl history --lookout-db` reads it, no file in between); needs --queue, and --jobset, --since, --from, --to select as for `history`')
            [CompletionResult]::new('--queue', '--queue', [CompletionResultType]::ParameterName, 'With --lookout-db: the jobs of this queue')
            [CompletionResult]::new('--jobset', '--jobset', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs of this job set')
            [CompletionResult]::new('--baseline', '--baseline', [CompletionResultType]::ParameterName, 'What-if: also replay under these (old) policies and report what changes')
            [CompletionResult]::new('--engine', '--engine', [CompletionResultType]::ParameterName, 'Which engine decides: the design (docs/engines.md) or what upstream Armada ships today (first policy only, categories only, preemption terminal, no backoff)')
            [CompletionResult]::new('--baseline-engine', '--baseline-engine', [CompletionResultType]::ParameterName, 'The engine of the baseline side (default: the same as --engine)')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config file (its `scheduling.retryPolicy` block is used)')
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Policies for jobs whose queue is not among the documents (comma separated, in order)')
            [CompletionResult]::new('--global-max-retries', '--global-max-retries', [CompletionResultType]::ParameterName, 'Override the scheduler''s globalMaxRetries')
            [CompletionResult]::new('--default-policy', '--default-policy', [CompletionResultType]::ParameterName, 'Override the scheduler''s defaultPolicyName')
            [CompletionResult]::new('--backtest-at', '--backtest-at', [CompletionResultType]::ParameterName, 'Check the estimates on this history: the trials of jobs submitted before TIME (RFC 3339) fit the rates, those of jobs submitted at or after it test them (every job needs `job.submittedAt`)')
            [CompletionResult]::new('--shard', '--shard', [CompletionResultType]::ParameterName, 'Replay only the jobs of shard I of N (`0/4`: files by byte range, stdin by FNV-1a of the job id, Lookout by a hash in its query, which needs `--to`); with `-o partial`, write the shard''s part of the answer, which `retryctl merge` adds up')
            [CompletionResult]::new('--categorizer', '--categorizer', [CompletionResultType]::ParameterName, 'The executor''s categorizer config (its `errorCategories`): classify every failed run with it before the engine decides, as the executor would; with a baseline, the baseline needs its own (--baseline-categorizer)')
            [CompletionResult]::new('--baseline-categorizer', '--baseline-categorizer', [CompletionResultType]::ParameterName, 'With --baseline or --baseline-from-cluster: the baseline side''s categorizer config, or `recorded` to keep the categories the runs were recorded with (never --categorizer''s)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: html is one self-contained page to share (inline CSS and SVG), markdown a plan for a pull request comment, partial a shard''s part for `retryctl merge` (with --shard)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: html is one self-contained page to share (inline CSS and SVG), markdown a plan for a pull request comment, partial a shard''s part for `retryctl merge` (with --shard)')
            [CompletionResult]::new('--output-file', '--output-file', [CompletionResultType]::ParameterName, 'Write the result to this file instead of stdout: written beside it and renamed once complete; left as it was when no result is written')
            [CompletionResult]::new('--emit', '--emit', [CompletionResultType]::ParameterName, 'Print, instead of running, the documents that run this command as --shard-count shards plus their merge: an `armadactl submit` file, or a Kubernetes Indexed Job')
            [CompletionResult]::new('--shard-count', '--shard-count', [CompletionResultType]::ParameterName, 'With --emit: the number of shards (1 to 1,000,000)')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'With --emit: the container image; its entrypoint must be retryctl (the repository''s Dockerfile)')
            [CompletionResult]::new('--volume', '--volume', [CompletionResultType]::ParameterName, 'With --emit: the PersistentVolumeClaim every job mounts at MOUNT (ReadWriteMany): the inputs lie under MOUNT, the partials and the result are written there')
            [CompletionResult]::new('--armada-queue', '--armada-queue', [CompletionResultType]::ParameterName, 'With --emit armada: the Armada queue the jobs are submitted to (--queue is Lookout''s)')
            [CompletionResult]::new('--emit-job-set', '--emit-job-set', [CompletionResultType]::ParameterName, 'With --emit: the Armada job set, or the Kubernetes Job''s name (the merge''s is NAME-merge)')
            [CompletionResult]::new('--job-set', '--job-set', [CompletionResultType]::ParameterName, 'job-set')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'With --emit: the Kubernetes namespace of the jobs (Armada''s default: `default`; Kubernetes'': kubectl''s)')
            [CompletionResult]::new('--requests', '--requests', [CompletionResultType]::ParameterName, 'With --emit: each job''s resources, requested and limited alike (default: cpu=1,memory=1Gi)')
            [CompletionResult]::new('--dsn-secret', '--dsn-secret', [CompletionResultType]::ParameterName, 'With --emit and --lookout-db: the Secret holding the DSN (key `dsn` unless given); the jobs get it as $LOOKOUT_DB and the DSN given here is never written out')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs submitted at or after this RFC 3339 time')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs submitted before this RFC 3339 time')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--baseline-from-cluster', '--baseline-from-cluster', [CompletionResultType]::ParameterName, 'What-if against what the cluster runs: the baseline is the retry policies and queue attachments stored in the --lookout-db database')
            [CompletionResult]::new('--allow-empty', '--allow-empty', [CompletionResultType]::ParameterName, 'Exit 0 when the history holds no job (an empty file, directory, stdin or Lookout window), instead of 3')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Read past the job lines of the history that cannot be read (each said as a warning), say how many, and exit 0; without it they make the exit status 3')
            [CompletionResult]::new('--exit-code', '--exit-code', [CompletionResultType]::ParameterName, 'With --baseline or --baseline-from-cluster: exit 1 when any job changes')
            [CompletionResult]::new('--all-changes', '--all-changes', [CompletionResultType]::ParameterName, 'With --baseline or --baseline-from-cluster, -o table: list every changed job (default: the first 20 of each transition, then `… and N more`)')
            [CompletionResult]::new('--from-server', '--from-server', [CompletionResultType]::ParameterName, 'Take the job''s queue and its policies from the server instead of files')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'Exit 1 when a history contradicts the decisions (not only on failed expectations); with --lookout-db, also when a row was left out because it could not be read')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;tune' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--vary', '--vary', [CompletionResultType]::ParameterName, 'One scalar field of one policy, varied: `NAME:PATH=VALUES`, PATH as `explain` names it (`ml:spec.retryLimit=0..10`, `ml:spec.rules[1].action=Retry,Fail`, `ml:spec.backoff.initialDelay=0s,30s,5m`, `infra:retryLimit=1..5/2`, `unset`), or `scheduler:PATH` for the scheduler config, `categorizer:PATH` for --categorizer''s (`categorizer:errorCategories.enabled=true,false`)')
            [CompletionResult]::new('--history', '--history', [CompletionResultType]::ParameterName, 'A FailureHistory file, a JSON Lines file of histories, a directory of them, or `-`')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Replay a real cluster''s history straight from Lookout''s PostgreSQL database (as `retryctl history --lookout-db` reads it, no file in between); needs --queue, and --jobset, --since, --from, --to select as for `history`')
            [CompletionResult]::new('--queue', '--queue', [CompletionResultType]::ParameterName, 'With --lookout-db: the jobs of this queue')
            [CompletionResult]::new('--jobset', '--jobset', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs of this job set')
            [CompletionResult]::new('--baseline', '--baseline', [CompletionResultType]::ParameterName, 'What-if: also replay under these (old) policies and report what changes')
            [CompletionResult]::new('--baseline-engine', '--baseline-engine', [CompletionResultType]::ParameterName, 'The engine of the baseline side (default: the same as --engine)')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config file (its `scheduling.retryPolicy` block is used)')
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Policies for jobs whose queue is not among the documents (comma separated, in order)')
            [CompletionResult]::new('--global-max-retries', '--global-max-retries', [CompletionResultType]::ParameterName, 'Override the scheduler''s globalMaxRetries')
            [CompletionResult]::new('--default-policy', '--default-policy', [CompletionResultType]::ParameterName, 'Override the scheduler''s defaultPolicyName')
            [CompletionResult]::new('--backtest-at', '--backtest-at', [CompletionResultType]::ParameterName, 'Check the estimates on this history: the trials of jobs submitted before TIME (RFC 3339) fit the rates, those of jobs submitted at or after it test them (every job needs `job.submittedAt`)')
            [CompletionResult]::new('--shard', '--shard', [CompletionResultType]::ParameterName, 'Replay only the jobs of shard I of N (`0/4`: files by byte range, stdin by FNV-1a of the job id, Lookout by a hash in its query, which needs `--to`); with `-o partial`, write the shard''s part of the answer, which `retryctl merge` adds up')
            [CompletionResult]::new('--categorizer', '--categorizer', [CompletionResultType]::ParameterName, 'The executor''s categorizer config (its `errorCategories`): every candidate classifies failed runs with it, as `simulate --categorizer` does; `--vary ''categorizer:PATH=…''` varies its fields (`errorCategories.categories[0].action=Retain,Delete`)')
            [CompletionResult]::new('--baseline-categorizer', '--baseline-categorizer', [CompletionResultType]::ParameterName, 'The baseline side''s categorizer config, or `recorded` to keep the categories the runs were recorded with (without --baseline: --categorizer, as written; with one, needed when --categorizer is given)')
            [CompletionResult]::new('--max-lost', '--max-lost', [CompletionResultType]::ParameterName, 'Recommend no candidate that loses more than N jobs the baseline saved (Succeeded → Failed)')
            [CompletionResult]::new('--max-compute', '--max-compute', [CompletionResultType]::ParameterName, 'Recommend no candidate whose cost (compute added − removed + expected) is over this: a duration (`10h`), or a percentage of the baseline''s recorded compute (`5%`)')
            [CompletionResult]::new('--max-contradictions', '--max-contradictions', [CompletionResultType]::ParameterName, 'Recommend nothing when more jobs than this contradict the baseline (it is then not what the cluster ran): a number of jobs (`5`), or a percentage of the jobs compared')
            [CompletionResult]::new('--max-candidates', '--max-candidates', [CompletionResultType]::ParameterName, 'Refuse (exit 2, before any replay) a search of more candidates than N')
            [CompletionResult]::new('--pick', '--pick', [CompletionResultType]::ParameterName, 'Print candidate ID''s documents (`recommended`: the recommended one''s; `template`: the one whose varied values are the template''s own, exit 1 when none is) as YAML, ready for `retryctl apply -f`; a numbered one needs no history (given one, the search runs first, and a candidate that loses a job the baseline saves or breaks a constraint is refused, exit 1, unless --force)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: html is one self-contained page (the frontier as a chart), markdown a table for a pull request, partial a shard''s part for `retryctl merge` (with --shard); --pick writes yaml')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: html is one self-contained page (the frontier as a chart), markdown a table for a pull request, partial a shard''s part for `retryctl merge` (with --shard); --pick writes yaml')
            [CompletionResult]::new('--output-file', '--output-file', [CompletionResultType]::ParameterName, 'Write the result to this file instead of stdout: written beside it and renamed once complete; left as it was when no result is written')
            [CompletionResult]::new('--emit', '--emit', [CompletionResultType]::ParameterName, 'Print, instead of running, the documents that run this command as --shard-count shards plus their merge: an `armadactl submit` file, or a Kubernetes Indexed Job')
            [CompletionResult]::new('--shard-count', '--shard-count', [CompletionResultType]::ParameterName, 'With --emit: the number of shards (1 to 1,000,000)')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'With --emit: the container image; its entrypoint must be retryctl (the repository''s Dockerfile)')
            [CompletionResult]::new('--volume', '--volume', [CompletionResultType]::ParameterName, 'With --emit: the PersistentVolumeClaim every job mounts at MOUNT (ReadWriteMany): the inputs lie under MOUNT, the partials and the result are written there')
            [CompletionResult]::new('--armada-queue', '--armada-queue', [CompletionResultType]::ParameterName, 'With --emit armada: the Armada queue the jobs are submitted to (--queue is Lookout''s)')
            [CompletionResult]::new('--emit-job-set', '--emit-job-set', [CompletionResultType]::ParameterName, 'With --emit: the Armada job set, or the Kubernetes Job''s name (the merge''s is NAME-merge)')
            [CompletionResult]::new('--job-set', '--job-set', [CompletionResultType]::ParameterName, 'job-set')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'With --emit: the Kubernetes namespace of the jobs (Armada''s default: `default`; Kubernetes'': kubectl''s)')
            [CompletionResult]::new('--requests', '--requests', [CompletionResultType]::ParameterName, 'With --emit: each job''s resources, requested and limited alike (default: cpu=1,memory=1Gi)')
            [CompletionResult]::new('--dsn-secret', '--dsn-secret', [CompletionResultType]::ParameterName, 'With --emit and --lookout-db: the Secret holding the DSN (key `dsn` unless given); the jobs get it as $LOOKOUT_DB and the DSN given here is never written out')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs submitted at or after this RFC 3339 time')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs submitted before this RFC 3339 time')
            [CompletionResult]::new('--engine', '--engine', [CompletionResultType]::ParameterName, 'Which engine the candidates run under: the design (docs/engines.md) or what upstream Armada ships today (first policy only, categories only, preemption terminal, no backoff)')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--baseline-from-cluster', '--baseline-from-cluster', [CompletionResultType]::ParameterName, 'What-if against what the cluster runs: the baseline is the retry policies and queue attachments stored in the --lookout-db database')
            [CompletionResult]::new('--allow-empty', '--allow-empty', [CompletionResultType]::ParameterName, 'Exit 0 when the history holds no job (an empty file, directory, stdin or Lookout window), instead of 3')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Read past the job lines of the history that cannot be read (each said as a warning), say how many, and exit 0; without it they make the exit status 3')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'With --pick ID (or template) and a history: write the candidate even when it loses a job the baseline saves or breaks a constraint (a warning says which)')
            [CompletionResult]::new('--exit-code', '--exit-code', [CompletionResultType]::ParameterName, 'Exit 1 when a candidate is recommended (a change worth making), with or without --pick')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;suggest' {
            [CompletionResult]::new('--history', '--history', [CompletionResultType]::ParameterName, 'A FailureHistory file, a JSON Lines file of histories, a directory of them, or `-`')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Replay a real cluster''s history straight from Lookout''s PostgreSQL database (as `retryctl history --lookout-db` reads it, no file in between); needs --queue, and --jobset, --since, --from, --to select as for `history`')
            [CompletionResult]::new('--jobset', '--jobset', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs of this job set')
            [CompletionResult]::new('--baseline-engine', '--baseline-engine', [CompletionResultType]::ParameterName, 'The engine of the baseline side (default: the same as --engine)')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config file (its `scheduling.retryPolicy` block is used)')
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Policies for jobs whose queue is not among the documents (comma separated, in order)')
            [CompletionResult]::new('--global-max-retries', '--global-max-retries', [CompletionResultType]::ParameterName, 'Override the scheduler''s globalMaxRetries')
            [CompletionResult]::new('--default-policy', '--default-policy', [CompletionResultType]::ParameterName, 'Override the scheduler''s defaultPolicyName')
            [CompletionResult]::new('--categorizer', '--categorizer', [CompletionResultType]::ParameterName, 'The executor''s categorizer config as deployed (its `errorCategories`): the baseline classifies failed runs with it; with --engine upstream the proposed categorizer keeps its categories after the new ones')
            [CompletionResult]::new('--min-trials', '--min-trials', [CompletionResultType]::ParameterName, 'A signature needs this many trials (failed runs followed by another run) for a rule of its own')
            [CompletionResult]::new('--futile', '--futile', [CompletionResultType]::ParameterName, 'A retry pays when at least this share of trials succeeds (0 < P < 1): the limit is the deepest depth that pays; a signature none of whose depths pays gets Fail')
            [CompletionResult]::new('--max-limit', '--max-limit', [CompletionResultType]::ParameterName, 'The largest limit proposed (1 to 10000)')
            [CompletionResult]::new('--executor-config', '--executor-config', [CompletionResultType]::ParameterName, 'With --engine upstream: also write the proposed executor config alone to FILE, as deployed (the deployed file''s other keys kept), to roll out before the policy')
            [CompletionResult]::new('--executor-config-format', '--executor-config-format', [CompletionResultType]::ParameterName, 'The shape of --executor-config''s FILE: `config` (the executor''s config file) or `helm` (the executor chart''s values, the config under `applicationConfig:`)')
            [CompletionResult]::new('--max-contradictions', '--max-contradictions', [CompletionResultType]::ParameterName, 'Reject the proposal when more jobs than this contradict today''s policy (it is then not what the cluster ran): a number of jobs (`5`), or a percentage of the jobs compared')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'The proposed policy''s name')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: html is one self-contained page, markdown a report for a pull request, policy the proposed documents alone (ready for `validate`, `tune -f` and `apply -f`), partial a shard''s learning for `retryctl merge` (with --shard)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: html is one self-contained page, markdown a report for a pull request, policy the proposed documents alone (ready for `validate`, `tune -f` and `apply -f`), partial a shard''s learning for `retryctl merge` (with --shard)')
            [CompletionResult]::new('--output-file', '--output-file', [CompletionResultType]::ParameterName, 'Write the result to this file instead of stdout: written beside it and renamed once complete; left as it was when no result is written')
            [CompletionResult]::new('--emit', '--emit', [CompletionResultType]::ParameterName, 'Print, instead of running, the documents that run this command as --shard-count shards plus their merge: an `armadactl submit` file, or a Kubernetes Indexed Job')
            [CompletionResult]::new('--shard-count', '--shard-count', [CompletionResultType]::ParameterName, 'With --emit: the number of shards (1 to 1,000,000)')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'With --emit: the container image; its entrypoint must be retryctl (the repository''s Dockerfile)')
            [CompletionResult]::new('--volume', '--volume', [CompletionResultType]::ParameterName, 'With --emit: the PersistentVolumeClaim every job mounts at MOUNT (ReadWriteMany): the inputs lie under MOUNT, the partials and the result are written there')
            [CompletionResult]::new('--armada-queue', '--armada-queue', [CompletionResultType]::ParameterName, 'With --emit armada: the Armada queue the jobs are submitted to (--queue is Lookout''s)')
            [CompletionResult]::new('--emit-job-set', '--emit-job-set', [CompletionResultType]::ParameterName, 'With --emit: the Armada job set, or the Kubernetes Job''s name (the merge''s is NAME-merge)')
            [CompletionResult]::new('--job-set', '--job-set', [CompletionResultType]::ParameterName, 'job-set')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'With --emit: the Kubernetes namespace of the jobs (Armada''s default: `default`; Kubernetes'': kubectl''s)')
            [CompletionResult]::new('--requests', '--requests', [CompletionResultType]::ParameterName, 'With --emit: each job''s resources, requested and limited alike (default: cpu=1,memory=1Gi)')
            [CompletionResult]::new('--dsn-secret', '--dsn-secret', [CompletionResultType]::ParameterName, 'With --emit and --lookout-db: the Secret holding the DSN (key `dsn` unless given); the jobs get it as $LOOKOUT_DB and the DSN given here is never written out')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs submitted at or after this RFC 3339 time')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'With --lookout-db: only jobs submitted before this RFC 3339 time')
            [CompletionResult]::new('--queue', '--queue', [CompletionResultType]::ParameterName, 'With --lookout-db: the jobs of this queue; with -o policy, also print this Queue with the proposal first in its retryPolicies')
            [CompletionResult]::new('--baseline', '--baseline', [CompletionResultType]::ParameterName, 'The policies the cluster runs today (files, directories): what the proposal is compared with, and whose first policy gives its defaultAction and retryLimit (none: no policy)')
            [CompletionResult]::new('--shard', '--shard', [CompletionResultType]::ParameterName, 'Learn from shard I of N''s share of the history only (`0/4`: a file or directory by byte range; not stdin nor --lookout-db, which its merge could not read again); with -o partial, write what it learned for `retryctl merge`, which proposes and compares over the whole history')
            [CompletionResult]::new('--engine', '--engine', [CompletionResultType]::ParameterName, 'The dialect of the proposal and the engine that replays it: design (one RetryPolicy, the default) or upstream (what Armada ships today: an executor categorizer config and a v1beta1 policy)')
            [CompletionResult]::new('--backtest-at', '--backtest-at', [CompletionResultType]::ParameterName, 'Learn from the jobs submitted before TIME (RFC 3339) and report the proposal''s effect on the jobs submitted at or after it alone (every job needs `job.submittedAt`)')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--baseline-from-cluster', '--baseline-from-cluster', [CompletionResultType]::ParameterName, 'What-if against what the cluster runs: the baseline is the retry policies and queue attachments stored in the --lookout-db database')
            [CompletionResult]::new('--allow-empty', '--allow-empty', [CompletionResultType]::ParameterName, 'Exit 0 when the history holds no job (an empty file, directory, stdin or Lookout window), instead of 3')
            [CompletionResult]::new('--skip-invalid', '--skip-invalid', [CompletionResultType]::ParameterName, 'Read past the job lines of the history that cannot be read (each said as a warning), say how many, and exit 0; without it they make the exit status 3')
            [CompletionResult]::new('--extrapolate', '--extrapolate', [CompletionResultType]::ParameterName, 'A depth with fewer than 5 trials of its own reads the signature''s overall share instead of ending the limit (every such limit is marked `extrapolated`)')
            [CompletionResult]::new('--exit-code', '--exit-code', [CompletionResultType]::ParameterName, 'exit-code')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;merge' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: the command''s own (`tune` and `suggest` have no jsonl; `policy` is `suggest`''s alone)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: the command''s own (`tune` and `suggest` have no jsonl; `policy` is `suggest`''s alone)')
            [CompletionResult]::new('--output-file', '--output-file', [CompletionResultType]::ParameterName, 'Write the result to this file instead of stdout: written beside it and renamed once complete; left as it was when no result is written')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;serve' {
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Address to listen on')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'SQLite database file (default: <data dir>/retryctl/armada.db)')
            [CompletionResult]::new('--basic-auth', '--basic-auth', [CompletionResultType]::ParameterName, 'Require HTTP basic auth with this `user:password` (repeatable)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Require this bearer token (repeatable)')
            [CompletionResult]::new('--basic-auth-file', '--basic-auth-file', [CompletionResultType]::ParameterName, 'Read accepted `user:password` lines from FILE (kept out of argv and `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Read accepted bearer tokens, one per line, from FILE')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Serve HTTPS with this certificate chain (PEM, leaf first); needs --tls-key')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1)')
            [CompletionResult]::new('--dialect', '--dialect', [CompletionResultType]::ParameterName, 'How retry policies are taken and answered: `v1` (the design dialect, marked by the `Armada-Retry-Policy-Dialect` header) or `upstream` (as today''s Armada: its flat JSON, its validation and messages, no header), to rehearse an upstream rollout')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--in-memory', '--in-memory', [CompletionResultType]::ParameterName, 'Keep everything in memory; nothing survives a restart')
            [CompletionResult]::new('--allow-anonymous', '--allow-anonymous', [CompletionResultType]::ParameterName, 'Allow listening on a non-loopback address without authentication')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;completion' {
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;config' {
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('view', 'view', [CompletionResultType]::ParameterValue, 'Print the config file with secrets masked')
            [CompletionResult]::new('get-contexts', 'get-contexts', [CompletionResultType]::ParameterValue, 'List the contexts, marking the current one')
            [CompletionResult]::new('current-context', 'current-context', [CompletionResultType]::ParameterValue, 'Print the current context')
            [CompletionResult]::new('use-context', 'use-context', [CompletionResultType]::ParameterValue, 'Make NAME the current context (rewrites the file, keeping every other key)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;config;view' {
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;config;get-contexts' {
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;config;current-context' {
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;config;use-context' {
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;config;help' {
            [CompletionResult]::new('view', 'view', [CompletionResultType]::ParameterValue, 'Print the config file with secrets masked')
            [CompletionResult]::new('get-contexts', 'get-contexts', [CompletionResultType]::ParameterValue, 'List the contexts, marking the current one')
            [CompletionResult]::new('current-context', 'current-context', [CompletionResultType]::ParameterValue, 'Print the current context')
            [CompletionResult]::new('use-context', 'use-context', [CompletionResultType]::ParameterValue, 'Make NAME the current context (rewrites the file, keeping every other key)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;config;help;view' {
            break
        }
        'retryctl;config;help;get-contexts' {
            break
        }
        'retryctl;config;help;current-context' {
            break
        }
        'retryctl;config;help;use-context' {
            break
        }
        'retryctl;config;help;help' {
            break
        }
        'retryctl;version' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--client', '--client', [CompletionResultType]::ParameterName, 'Print only the client version; do not contact the server')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;describe' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Describe retry policies')
            [CompletionResult]::new('retry-policy', 'retry-policy', [CompletionResultType]::ParameterValue, 'Describe retry policies')
            [CompletionResult]::new('retrypolicies', 'retrypolicies', [CompletionResultType]::ParameterValue, 'Describe retry policies')
            [CompletionResult]::new('retry-policies', 'retry-policies', [CompletionResultType]::ParameterValue, 'Describe retry policies')
            [CompletionResult]::new('rp', 'rp', [CompletionResultType]::ParameterValue, 'Describe retry policies')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Describe queues')
            [CompletionResult]::new('queues', 'queues', [CompletionResultType]::ParameterValue, 'Describe queues')
            [CompletionResult]::new('q', 'q', [CompletionResultType]::ParameterValue, 'Describe queues')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;describe;retrypolicy' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;describe;retry-policy' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;describe;retrypolicies' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;describe;retry-policies' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;describe;rp' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;describe;queue' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;describe;queues' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;describe;q' {
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of directories given with -f')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;describe;help' {
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Describe retry policies')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Describe queues')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;describe;help;retrypolicy' {
            break
        }
        'retryctl;describe;help;queue' {
            break
        }
        'retryctl;describe;help;help' {
            break
        }
        'retryctl;explain' {
            [CompletionResult]::new('--api-version', '--api-version', [CompletionResultType]::ParameterName, 'The layout to explain: `armadaproject.io/v1` (a RetryPolicy''s design dialect) or `armadaproject.io/v1beta1` (upstream''s flat one)')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Show every field below, not only the direct ones')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;schema' {
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;history' {
            [CompletionResult]::new('--queue', '--queue', [CompletionResultType]::ParameterName, 'Only jobs of this queue (default: every queue''s, each job with its own queue: the week a changed categorizer is compared on)')
            [CompletionResult]::new('--jobset', '--jobset', [CompletionResultType]::ParameterName, 'Only jobs of this job set')
            [CompletionResult]::new('--job', '--job', [CompletionResultType]::ParameterName, 'Only this job (repeatable)')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Only jobs submitted within this duration before now (`7d`, `36h`)')
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Only jobs submitted at or after this RFC 3339 time')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Only jobs submitted before this RFC 3339 time')
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Lookout''s PostgreSQL database (`postgresql://user:password@host:5432/lookout`); without a value, or without --lookout-url either: $LOOKOUT_DB')
            [CompletionResult]::new('--lookout-url', '--lookout-url', [CompletionResultType]::ParameterName, 'Lookout''s REST API (`http://lookout:10000`); auth as for the Armada API')
            [CompletionResult]::new('--categorizer', '--categorizer', [CompletionResultType]::ParameterName, 'The executor''s categorizer config as deployed (its `errorCategories`): the hint its rules append to a run''s error text is taken off the texts of the runs it classified')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format: one JSON document a line, or YAML documents')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format: one JSON document a line, or YAML documents')
            [CompletionResult]::new('--output-file', '--output-file', [CompletionResultType]::ParameterName, 'Write to this file instead of stdout: written beside it and renamed once complete; left as it was when the export fails')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'Exit 1 after the export when a row was left out because it could not be read (each is reported on stderr either way)')
            [CompletionResult]::new('--allow-empty', '--allow-empty', [CompletionResultType]::ParameterName, 'Exit 0 when no job matches (an empty export), instead of 3')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;watch' {
            [CompletionResult]::new('--lookout-db', '--lookout-db', [CompletionResultType]::ParameterName, 'Lookout''s PostgreSQL database (`postgresql://user:password@host:5432/lookout`); without the flag or without a value: $LOOKOUT_DB')
            [CompletionResult]::new('--queue', '--queue', [CompletionResultType]::ParameterName, 'A queue to watch (repeatable); default: the queues of the Queue documents of --baseline and -f')
            [CompletionResult]::new('--baseline', '--baseline', [CompletionResultType]::ParameterName, 'Today''s policy: the RetryPolicy and Queue documents the cluster runs (files, directories), and its categorizer document if it has one')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'A candidate (a file or a directory), replayed in the shadow of today''s policy and labelled by its base name (repeatable: one candidate each)')
            [CompletionResult]::new('--filename', '--filename', [CompletionResultType]::ParameterName, 'A candidate (a file or a directory), replayed in the shadow of today''s policy and labelled by its base name (repeatable: one candidate each)')
            [CompletionResult]::new('--categorizer', '--categorizer', [CompletionResultType]::ParameterName, 'The candidates'' categorizer config (the executor''s `errorCategories`), for those whose files hold none; the baseline then needs its own (--baseline-categorizer)')
            [CompletionResult]::new('--baseline-categorizer', '--baseline-categorizer', [CompletionResultType]::ParameterName, 'Today''s categorizer config, or `recorded` to keep the categories the runs were recorded with (never --categorizer''s)')
            [CompletionResult]::new('--engine', '--engine', [CompletionResultType]::ParameterName, 'The engine of the candidates: design or upstream (default: as the documents'' dialect picks, docs/engines.md)')
            [CompletionResult]::new('--baseline-engine', '--baseline-engine', [CompletionResultType]::ParameterName, 'The engine of today''s policy (default: the same as --engine)')
            [CompletionResult]::new('--scheduler-config', '--scheduler-config', [CompletionResultType]::ParameterName, 'An Armada scheduler config file (its `scheduling.retryPolicy` block is used)')
            [CompletionResult]::new('--retry-policy', '--retry-policy', [CompletionResultType]::ParameterName, 'Policies for jobs whose queue is not among the documents (comma separated, in order)')
            [CompletionResult]::new('--global-max-retries', '--global-max-retries', [CompletionResultType]::ParameterName, 'Override the scheduler''s globalMaxRetries')
            [CompletionResult]::new('--default-policy', '--default-policy', [CompletionResultType]::ParameterName, 'Override the scheduler''s defaultPolicyName')
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Serve /metrics, /report and /healthz on this address')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'The file the cursor, the jobs counted of the last 5 minutes and every counter are kept in (written after each poll); a restart resumes from it')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Where a fresh --state starts: jobs that reached a terminal state since this duration before now (`7d`, `36h`) or this RFC 3339 time (default: now)')
            [CompletionResult]::new('--poll', '--poll', [CompletionResultType]::ParameterName, 'How long to wait between polls (a Go duration: `30s`, `1m`)')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'The jobs /report replays and each candidate''s verdict is judged on: those that reached a terminal state within this duration before now (`7d`, `36h`)')
            [CompletionResult]::new('--settle', '--settle', [CompletionResultType]::ParameterName, 'How long a job read terminal waits for its runs (Lookout writes them after the job''s state) before it is counted as its record stands (a Go duration: `10m`, `1h`)')
            [CompletionResult]::new('--min-jobs', '--min-jobs', [CompletionResultType]::ParameterName, 'Below this many jobs with a failed run in the window, a candidate''s verdict is `inconclusive`')
            [CompletionResult]::new('--max-contradictions', '--max-contradictions', [CompletionResultType]::ParameterName, 'How many jobs (or what share of them, `1%`) of the window may contradict today''s policy before a candidate''s verdict is `reject`: past it, today''s policy is not what the cluster runs')
            [CompletionResult]::new('--emit', '--emit', [CompletionResultType]::ParameterName, 'Print, instead of watching, the Kubernetes Deployment that runs this command line')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'With --emit: the container image; its entrypoint must be retryctl (the repository''s Dockerfile)')
            [CompletionResult]::new('--volume', '--volume', [CompletionResultType]::ParameterName, 'With --emit: the PersistentVolumeClaim the pod mounts at MOUNT: the policies lie under MOUNT and --state is written there')
            [CompletionResult]::new('--dsn-secret', '--dsn-secret', [CompletionResultType]::ParameterName, 'With --emit: the Secret holding the DSN (key `dsn` unless given); the pod gets it as $LOOKOUT_DB and the DSN is never written out')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'With --emit: the Deployment''s namespace (default: kubectl''s)')
            [CompletionResult]::new('--requests', '--requests', [CompletionResultType]::ParameterName, 'With --emit: the container''s resources, requested and limited alike (default: cpu=1,memory=256Mi)')
            [CompletionResult]::new('--armada-url', '--armada-url', [CompletionResultType]::ParameterName, 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context''s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'Context of the config file to use instead of its `currentContext`')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to the server, as a duration (`10s`, `500ms`)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'Send the bearer token held in FILE (one line)')
            [CompletionResult]::new('--certificate-authority', '--certificate-authority', [CompletionResultType]::ParameterName, 'Also trust the CA certificates of this PEM file for `https://` (default: the context''s `certificateAuthority`)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Descend into subdirectories of the directories given')
            [CompletionResult]::new('--recursive', '--recursive', [CompletionResultType]::ParameterName, 'Descend into subdirectories of the directories given')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate (insecure: warns on every run)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Log each request and its status to stderr (credentials are never printed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'retryctl;help' {
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Parse, validate and lint documents offline (what each check means: docs/policies.md)')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create every document of the files (fails on an existing name), or a queue from flags')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'Show retry policies or queues')
            [CompletionResult]::new('update', 'update', [CompletionResultType]::ParameterValue, 'Replace existing resources from files, or change a queue in place')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Create or update every document of the files')
            [CompletionResult]::new('diff', 'diff', [CompletionResultType]::ParameterValue, 'Show how the files differ from the server (exit 0 same, 1 different)')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete retry policies or queues')
            [CompletionResult]::new('simulate', 'simulate', [CompletionResultType]::ParameterValue, 'Replay failure histories through the retry evaluator')
            [CompletionResult]::new('tune', 'tune', [CompletionResultType]::ParameterValue, 'Search retry-policy candidates on a history: which policy should this cluster run?')
            [CompletionResult]::new('suggest', 'suggest', [CompletionResultType]::ParameterValue, 'Learn a retry policy from the cluster''s own failures, and prove it on the same history')
            [CompletionResult]::new('merge', 'merge', [CompletionResultType]::ParameterValue, 'Add up a sharded simulate, tune or suggest (`--shard I/N -o partial`) into one answer')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run a local Armada-compatible API server with SQLite storage')
            [CompletionResult]::new('completion', 'completion', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Show or change the armadactl config file')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print the client version, and the server''s dialect when it is reachable')
            [CompletionResult]::new('describe', 'describe', [CompletionResultType]::ParameterValue, 'Explain a retry policy or queue in words: limits, backoff schedule, who uses it')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Document the fields of a resource (`retrypolicy.spec.rules`)')
            [CompletionResult]::new('schema', 'schema', [CompletionResultType]::ParameterValue, 'Print the JSON Schema (draft 2020-12) of a document kind, for editors')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Export a real cluster''s failure history from Armada''s Lookout as FailureHistory documents')
            [CompletionResult]::new('watch', 'watch', [CompletionResultType]::ParameterValue, 'Today''s policy and candidates on Lookout''s live record, as Prometheus metrics')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retryctl;help;validate' {
            break
        }
        'retryctl;help;create' {
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Create a queue from flags')
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Create retry policies from files (only RetryPolicy documents are accepted)')
            break
        }
        'retryctl;help;create;queue' {
            break
        }
        'retryctl;help;create;retrypolicy' {
            break
        }
        'retryctl;help;get' {
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Retry policies: one or more by name, or all')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Queues: one or more by name, or all')
            break
        }
        'retryctl;help;get;retrypolicy' {
            break
        }
        'retryctl;help;get;queue' {
            break
        }
        'retryctl;help;update' {
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Change a queue in place: flags not given keep their values')
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Replace retry policies from files (only RetryPolicy documents are accepted)')
            break
        }
        'retryctl;help;update;queue' {
            break
        }
        'retryctl;help;update;retrypolicy' {
            break
        }
        'retryctl;help;apply' {
            break
        }
        'retryctl;help;diff' {
            break
        }
        'retryctl;help;delete' {
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Delete retry policies. A policy still attached to queues is refused unless --detach')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Delete queues')
            break
        }
        'retryctl;help;delete;retrypolicy' {
            break
        }
        'retryctl;help;delete;queue' {
            break
        }
        'retryctl;help;simulate' {
            break
        }
        'retryctl;help;tune' {
            break
        }
        'retryctl;help;suggest' {
            break
        }
        'retryctl;help;merge' {
            break
        }
        'retryctl;help;serve' {
            break
        }
        'retryctl;help;completion' {
            break
        }
        'retryctl;help;config' {
            [CompletionResult]::new('view', 'view', [CompletionResultType]::ParameterValue, 'Print the config file with secrets masked')
            [CompletionResult]::new('get-contexts', 'get-contexts', [CompletionResultType]::ParameterValue, 'List the contexts, marking the current one')
            [CompletionResult]::new('current-context', 'current-context', [CompletionResultType]::ParameterValue, 'Print the current context')
            [CompletionResult]::new('use-context', 'use-context', [CompletionResultType]::ParameterValue, 'Make NAME the current context (rewrites the file, keeping every other key)')
            break
        }
        'retryctl;help;config;view' {
            break
        }
        'retryctl;help;config;get-contexts' {
            break
        }
        'retryctl;help;config;current-context' {
            break
        }
        'retryctl;help;config;use-context' {
            break
        }
        'retryctl;help;version' {
            break
        }
        'retryctl;help;describe' {
            [CompletionResult]::new('retrypolicy', 'retrypolicy', [CompletionResultType]::ParameterValue, 'Describe retry policies')
            [CompletionResult]::new('queue', 'queue', [CompletionResultType]::ParameterValue, 'Describe queues')
            break
        }
        'retryctl;help;describe;retrypolicy' {
            break
        }
        'retryctl;help;describe;queue' {
            break
        }
        'retryctl;help;explain' {
            break
        }
        'retryctl;help;schema' {
            break
        }
        'retryctl;help;history' {
            break
        }
        'retryctl;help;watch' {
            break
        }
        'retryctl;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
