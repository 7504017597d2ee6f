# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_retryctl_global_optspecs
    string join \n armada-url= c/context= config= timeout= token= token-file= certificate-authority= insecure-skip-tls-verify v/verbose color= h/help V/version
end

function __fish_retryctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_retryctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_retryctl_using_subcommand
    set -l cmd (__fish_retryctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c retryctl -n "__fish_retryctl_needs_command" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_needs_command" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_needs_command" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_needs_command" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_needs_command" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_needs_command" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_needs_command" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_needs_command" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_needs_command" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_needs_command" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_needs_command" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "validate" -d 'Parse, validate and lint documents offline (what each check means: docs/policies.md)'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "create" -d 'Create every document of the files (fails on an existing name), or a queue from flags'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "get" -d 'Show retry policies or queues'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "update" -d 'Replace existing resources from files, or change a queue in place'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "apply" -d 'Create or update every document of the files'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "diff" -d 'Show how the files differ from the server (exit 0 same, 1 different)'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "delete" -d 'Delete retry policies or queues'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "simulate" -d 'Replay failure histories through the retry evaluator'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "tune" -d 'Search retry-policy candidates on a history: which policy should this cluster run?'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "suggest" -d 'Learn a retry policy from the cluster\'s own failures, and prove it on the same history'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "merge" -d 'Add up a sharded simulate, tune or suggest (`--shard I/N -o partial`) into one answer'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "serve" -d 'Run a local Armada-compatible API server with SQLite storage'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "completion" -d 'Print a shell completion script'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "config" -d 'Show or change the armadactl config file'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "version" -d 'Print the client version, and the server\'s dialect when it is reachable'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "describe" -d 'Explain a retry policy or queue in words: limits, backoff schedule, who uses it'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "explain" -d 'Document the fields of a resource (`retrypolicy.spec.rules`)'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "schema" -d 'Print the JSON Schema (draft 2020-12) of a document kind, for editors'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "history" -d 'Export a real cluster\'s failure history from Armada\'s Lookout as FailureHistory documents'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "watch" -d 'Today\'s policy and candidates on Lookout\'s live record, as Prometheus metrics'
complete -c retryctl -n "__fish_retryctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -s o -l output -d 'Report format' -r -f -a "text\t'Human-readable findings on stderr, a summary on stdout'
json\t'One JSON object on stdout, camelCase keys (its fields: docs/policies.md)'
github\t'GitHub Actions workflow annotations on stdout'"
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l scheduler-config -d 'An Armada scheduler config: warn about limits above its globalMaxRetries and a defaultPolicyName missing from the documents' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l categorizer -d 'The executor\'s categorizer config (as -f would read it): also warn about policy rules on categories it never assigns, and Retry rules on categories whose pod it keeps' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l strict -d 'Treat warnings as errors'
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l upstream -d 'Check for an upstream Armada server: report as errors exactly the fields `create` against such a server refuses'
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand validate" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "queue" -d 'Create a queue from flags'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "queues" -d 'Create a queue from flags'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "q" -d 'Create a queue from flags'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "retrypolicy" -d 'Create retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "retry-policy" -d 'Create retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "retrypolicies" -d 'Create retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "retry-policies" -d 'Create retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "rp" -d 'Create retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l retry-policy -d 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l priority-factor -d 'Priority factor (at least 1.0)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l owner -d 'User owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l group-owner -d 'Group owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -s l -l label -d 'Label `key=value` (repeatable)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l cordon -d 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon' -r -f -a "true\t''
false\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queue" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l retry-policy -d 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l priority-factor -d 'Priority factor (at least 1.0)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l owner -d 'User owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l group-owner -d 'Group owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -s l -l label -d 'Label `key=value` (repeatable)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l cordon -d 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon' -r -f -a "true\t''
false\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from queues" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l retry-policy -d 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l priority-factor -d 'Priority factor (at least 1.0)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l owner -d 'User owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l group-owner -d 'Group owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -s l -l label -d 'Label `key=value` (repeatable)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l cordon -d 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon' -r -f -a "true\t''
false\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from q" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retrypolicies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from retry-policies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from rp" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from help" -f -a "queue" -d 'Create a queue from flags'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from help" -f -a "retrypolicy" -d 'Create retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand create; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s o -l output -d 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl\'s `{.items[*].metadata.name}`), custom-columns=NAME:.path,..' -r -f -a "table\t''
wide\t''
yaml\t''
json\t''
name\t''
jsonpath=\t''
custom-columns=\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l api-version -d 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l sort-by -d 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l lookout-db -d 'Read what the cluster stores, read-only, from Lookout\'s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l no-headers -d 'Leave out the header line of tables and custom columns'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retrypolicy" -d 'Retry policies: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retry-policy" -d 'Retry policies: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retrypolicies" -d 'Retry policies: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retry-policies" -d 'Retry policies: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "rp" -d 'Retry policies: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "queue" -d 'Queues: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "queues" -d 'Queues: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "q" -d 'Queues: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -s o -l output -d 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl\'s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...' -r -f -a "table\t''
wide\t''
yaml\t''
json\t''
name\t''
jsonpath=\t''
custom-columns=\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l api-version -d 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server\'s, v1beta1 from today\'s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l sort-by -d 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l lookout-db -d 'Read what the cluster stores, read-only, from Lookout\'s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l no-headers -d 'Leave out the header line of tables and custom columns'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -s o -l output -d 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl\'s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...' -r -f -a "table\t''
wide\t''
yaml\t''
json\t''
name\t''
jsonpath=\t''
custom-columns=\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l api-version -d 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server\'s, v1beta1 from today\'s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l sort-by -d 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l lookout-db -d 'Read what the cluster stores, read-only, from Lookout\'s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l no-headers -d 'Leave out the header line of tables and custom columns'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -s o -l output -d 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl\'s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...' -r -f -a "table\t''
wide\t''
yaml\t''
json\t''
name\t''
jsonpath=\t''
custom-columns=\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l api-version -d 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server\'s, v1beta1 from today\'s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l sort-by -d 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l lookout-db -d 'Read what the cluster stores, read-only, from Lookout\'s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l no-headers -d 'Leave out the header line of tables and custom columns'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retrypolicies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -s o -l output -d 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl\'s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...' -r -f -a "table\t''
wide\t''
yaml\t''
json\t''
name\t''
jsonpath=\t''
custom-columns=\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l api-version -d 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server\'s, v1beta1 from today\'s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l sort-by -d 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l lookout-db -d 'Read what the cluster stores, read-only, from Lookout\'s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l no-headers -d 'Leave out the header line of tables and custom columns'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from retry-policies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -s o -l output -d 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl\'s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...' -r -f -a "table\t''
wide\t''
yaml\t''
json\t''
name\t''
jsonpath=\t''
custom-columns=\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l api-version -d 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server\'s, v1beta1 from today\'s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l sort-by -d 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l lookout-db -d 'Read what the cluster stores, read-only, from Lookout\'s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l no-headers -d 'Leave out the header line of tables and custom columns'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from rp" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -s o -l output -d 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl\'s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...' -r -f -a "table\t''
wide\t''
yaml\t''
json\t''
name\t''
jsonpath=\t''
custom-columns=\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l api-version -d 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server\'s, v1beta1 from today\'s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l sort-by -d 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l lookout-db -d 'Read what the cluster stores, read-only, from Lookout\'s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l no-headers -d 'Leave out the header line of tables and custom columns'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queue" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -s o -l output -d 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl\'s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...' -r -f -a "table\t''
wide\t''
yaml\t''
json\t''
name\t''
jsonpath=\t''
custom-columns=\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l api-version -d 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server\'s, v1beta1 from today\'s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l sort-by -d 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l lookout-db -d 'Read what the cluster stores, read-only, from Lookout\'s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l no-headers -d 'Leave out the header line of tables and custom columns'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from queues" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -s o -l output -d 'Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl\'s `{.items[*].metadata.name}`), custom-columns=NAME:.path,...' -r -f -a "table\t''
wide\t''
yaml\t''
json\t''
name\t''
jsonpath=\t''
custom-columns=\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l api-version -d 'Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or `armadaproject.io/v1beta1`. Default: the server\'s, v1beta1 from today\'s Armada (a server without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l sort-by -d 'Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l lookout-db -d 'Read what the cluster stores, read-only, from Lookout\'s PostgreSQL database (tables `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l no-headers -d 'Leave out the header line of tables and custom columns'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from q" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from help" -f -a "retrypolicy" -d 'Retry policies: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from help" -f -a "queue" -d 'Queues: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand get; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "queue" -d 'Change a queue in place: flags not given keep their values'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "queues" -d 'Change a queue in place: flags not given keep their values'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "q" -d 'Change a queue in place: flags not given keep their values'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "retrypolicy" -d 'Replace retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "retry-policy" -d 'Replace retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "retrypolicies" -d 'Replace retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "retry-policies" -d 'Replace retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "rp" -d 'Replace retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and not __fish_seen_subcommand_from queue queues q retrypolicy retry-policy retrypolicies retry-policies rp help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l retry-policy -d 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l priority-factor -d 'Priority factor (at least 1.0)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l owner -d 'User owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l group-owner -d 'Group owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -s l -l label -d 'Label `key=value` (repeatable)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l cordon -d 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon' -r -f -a "true\t''
false\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l add-retry-policy -d 'Attach a retry policy at the end of the list (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l remove-retry-policy -d 'Detach a retry policy (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queue" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l retry-policy -d 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l priority-factor -d 'Priority factor (at least 1.0)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l owner -d 'User owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l group-owner -d 'Group owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -s l -l label -d 'Label `key=value` (repeatable)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l cordon -d 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon' -r -f -a "true\t''
false\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l add-retry-policy -d 'Attach a retry policy at the end of the list (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l remove-retry-policy -d 'Detach a retry policy (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from queues" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l retry-policy -d 'Retry policies to attach, in precedence order (comma separated). On `update`, replaces the list' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l priority-factor -d 'Priority factor (at least 1.0)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l owner -d 'User owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l group-owner -d 'Group owner (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -s l -l label -d 'Label `key=value` (repeatable)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l cordon -d 'Cordon the queue (no new jobs), or `--cordon=false` to uncordon' -r -f -a "true\t''
false\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l add-retry-policy -d 'Attach a retry policy at the end of the list (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l remove-retry-policy -d 'Detach a retry policy (repeatable, or comma separated)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from q" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retrypolicies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from retry-policies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from rp" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from help" -f -a "queue" -d 'Change a queue in place: flags not given keep their values'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from help" -f -a "retrypolicy" -d 'Replace retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand update; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l categorizer -d 'The executor\'s categorizer config as it will be deployed: refuse (exit 1, nothing sent) a policy naming a category it never assigns (roll out the executor config first)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l prune -d 'Also delete the retry policies on the server that no file names (as `diff` lists them); refused, deleting nothing, while a queue still uses one'
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l force -d 'Apply a file `suggest -o policy` headed `# verdict: reject`, which is refused (exit 1, nothing sent) without it'
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand apply" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -l api-version -d 'Dialect both sides of a retry policy are shown in: `armadaproject.io/v1` or `armadaproject.io/v1beta1` (today\'s Armada)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand diff" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l ignore-not-found -d 'Succeed when a name does not exist'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l detach -d 'Detach a policy from every queue that uses it, then delete it'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retrypolicy" -d 'Delete retry policies. A policy still attached to queues is refused unless --detach'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retry-policy" -d 'Delete retry policies. A policy still attached to queues is refused unless --detach'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retrypolicies" -d 'Delete retry policies. A policy still attached to queues is refused unless --detach'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retry-policies" -d 'Delete retry policies. A policy still attached to queues is refused unless --detach'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "rp" -d 'Delete retry policies. A policy still attached to queues is refused unless --detach'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "queue" -d 'Delete queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "queues" -d 'Delete queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "q" -d 'Delete queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l ignore-not-found -d 'Succeed when a name does not exist'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l detach -d 'Detach the policy from every queue that uses it, then delete it'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l ignore-not-found -d 'Succeed when a name does not exist'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l detach -d 'Detach the policy from every queue that uses it, then delete it'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l ignore-not-found -d 'Succeed when a name does not exist'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l detach -d 'Detach the policy from every queue that uses it, then delete it'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retrypolicies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l ignore-not-found -d 'Succeed when a name does not exist'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l detach -d 'Detach the policy from every queue that uses it, then delete it'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from retry-policies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l ignore-not-found -d 'Succeed when a name does not exist'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l detach -d 'Detach the policy from every queue that uses it, then delete it'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from rp" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l ignore-not-found -d 'Succeed when a name does not exist'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queue" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l ignore-not-found -d 'Succeed when a name does not exist'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from queues" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l dry-run -d '`client`: validate offline, send nothing; `server`: let the server validate only' -r -f -a "none\t'Send the request'
client\t'Validate fully offline and send nothing'
server\t'Ask the server to validate without storing (falls back to client)'"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l ignore-not-found -d 'Succeed when a name does not exist'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from q" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from help" -f -a "retrypolicy" -d 'Delete retry policies. A policy still attached to queues is refused unless --detach'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from help" -f -a "queue" -d 'Delete queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand delete; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l history -d 'A FailureHistory file, a JSON Lines file of histories, a directory of them, or `-`' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l lookout-db -d 'Replay a real cluster\'s history straight from Lookout\'s PostgreSQL database (as `retryctl history --lookout-db` reads it, no file in between); needs --queue, and --jobset, --since, --from, --to select as for `history`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l queue -d 'With --lookout-db: the jobs of this queue' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l jobset -d 'With --lookout-db: only jobs of this job set' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l baseline -d 'What-if: also replay under these (old) policies and report what changes' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l engine -d 'Which engine decides: the design (docs/engines.md) or what upstream Armada ships today (first policy only, categories only, preemption terminal, no backoff)' -r -f -a "design\t''
upstream\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l baseline-engine -d 'The engine of the baseline side (default: the same as --engine)' -r -f -a "design\t''
upstream\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l scheduler-config -d 'An Armada scheduler config file (its `scheduling.retryPolicy` block is used)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l retry-policy -d 'Policies for jobs whose queue is not among the documents (comma separated, in order)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l global-max-retries -d 'Override the scheduler\'s globalMaxRetries' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l default-policy -d 'Override the scheduler\'s defaultPolicyName' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l backtest-at -d 'Check the estimates on this history: the trials of jobs submitted before TIME (RFC 3339) fit the rates, those of jobs submitted at or after it test them (every job needs `job.submittedAt`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l incidents -d 'Incident windows: `auto` finds the hours in which far more jobs failed than the history\'s own rate explains (an outage) and leaves their failed runs out of what is learned (the estimates\' rates, suggest\'s signatures); `off` finds none (--incident\'s windows still count)' -r -f -a "auto\t''
off\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l incident -d 'A window to leave out of what is learned, by hand (a change window, an outage you know of): `FROM/TO`, two RFC 3339 times; repeatable; merged with a detected window it overlaps' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l contention -d 'Retries while others waited (docs/contention.md): `on` sums, from the record\'s times, what the retries ran while other jobs\' requests waited in their pool, for the record and each side, and says it; `off` leaves the section out and the sums undone; `auto`, the default, is `on` in one process and `off` in a `simulate` or `tune` shard (`--shard`, `--emit`), whose merged output says it was not computed (`suggest` compares in its merge, one process)' -r -f -a "auto\t''
on\t''
off\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l shard -d 'Replay only the jobs of shard I of N (`0/4`: files by byte range, stdin by FNV-1a of the job id, Lookout by a hash in its query, which needs `--to`); with `-o partial`, write the shard\'s part of the answer, which `retryctl merge` adds up' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l categorizer -d 'The executor\'s categorizer config (its `errorCategories`): classify every failed run with it before the engine decides, as the executor would; with a baseline, the baseline needs its own (--baseline-categorizer)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l baseline-categorizer -d 'With --baseline or --baseline-from-cluster: the baseline side\'s categorizer config, or `recorded` to keep the categories the runs were recorded with (never --categorizer\'s)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -s o -l output -d 'Output format: html is one self-contained page to share (inline CSS and SVG), markdown a plan for a pull request comment, partial a shard\'s part for `retryctl merge` (with --shard)' -r -f -a "table\t''
json\t''
yaml\t''
jsonl\t''
html\t''
markdown\t''
partial\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l output-file -d 'Write the result to this file instead of stdout: written beside it and renamed once complete; left as it was when no result is written' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l emit -d 'Print, instead of running, the documents that run this command as --shard-count shards plus their merge: an `armadactl submit` file, or a Kubernetes Indexed Job' -r -f -a "armada\t''
kubernetes\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l shard-count -d 'With --emit: the number of shards (1 to 1,000,000)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l image -d 'With --emit: the container image; its entrypoint must be retryctl (the repository\'s Dockerfile)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l volume -d 'With --emit: the PersistentVolumeClaim every job mounts at MOUNT (ReadWriteMany): the inputs lie under MOUNT, the partials and the result are written there' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l armada-queue -d 'With --emit armada: the Armada queue the jobs are submitted to (--queue is Lookout\'s)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l emit-job-set -d 'With --emit: the Armada job set, or the Kubernetes Job\'s name (the merge\'s is NAME-merge)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l job-set -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l namespace -d 'With --emit: the Kubernetes namespace of the jobs (Armada\'s default: `default`; Kubernetes\': kubectl\'s)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l requests -d 'With --emit: each job\'s resources, requested and limited alike (default: cpu=1,memory=1Gi)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l dsn-secret -d 'With --emit and --lookout-db: the Secret holding the DSN (key `dsn` unless given); the jobs get it as $LOOKOUT_DB and the DSN given here is never written out' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l since -d 'With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l from -d 'With --lookout-db: only jobs submitted at or after this RFC 3339 time' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l to -d 'With --lookout-db: only jobs submitted before this RFC 3339 time' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l baseline-from-cluster -d 'What-if against what the cluster runs: the baseline is the retry policies and queue attachments stored in the --lookout-db database'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l allow-empty -d 'Exit 0 when the history holds no job (an empty file, directory, stdin or Lookout window), instead of 3'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l skip-invalid -d 'Read past the job lines of the history that cannot be read (each said as a warning), say how many, and exit 0; without it they make the exit status 3'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l exit-code -d 'With --baseline or --baseline-from-cluster: exit 1 when any job changes'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l all-changes -d 'With --baseline or --baseline-from-cluster, -o table: list every changed job (default: the first 20 of each transition, then `… and N more`)'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l from-server -d 'Take the job\'s queue and its policies from the server instead of files'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l strict -d 'Exit 1 when a history contradicts the decisions (not only on failed expectations); with --lookout-db, also when a row was left out because it could not be read'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand simulate" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l vary -d 'One scalar field of one policy, varied: `NAME:PATH=VALUES`, PATH as `explain` names it (`ml:spec.retryLimit=0..10`, `ml:spec.rules[1].action=Retry,Fail`, `ml:spec.backoff.initialDelay=0s,30s,5m`, `infra:retryLimit=1..5/2`, `unset`), or `scheduler:PATH` for the scheduler config, `categorizer:PATH` for --categorizer\'s (`categorizer:errorCategories.enabled=true,false`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l history -d 'A FailureHistory file, a JSON Lines file of histories, a directory of them, or `-`' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l lookout-db -d 'Replay a real cluster\'s history straight from Lookout\'s PostgreSQL database (as `retryctl history --lookout-db` reads it, no file in between); needs --queue, and --jobset, --since, --from, --to select as for `history`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l queue -d 'With --lookout-db: the jobs of this queue' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l jobset -d 'With --lookout-db: only jobs of this job set' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l baseline -d 'What-if: also replay under these (old) policies and report what changes' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l baseline-engine -d 'The engine of the baseline side (default: the same as --engine)' -r -f -a "design\t''
upstream\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l scheduler-config -d 'An Armada scheduler config file (its `scheduling.retryPolicy` block is used)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l retry-policy -d 'Policies for jobs whose queue is not among the documents (comma separated, in order)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l global-max-retries -d 'Override the scheduler\'s globalMaxRetries' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l default-policy -d 'Override the scheduler\'s defaultPolicyName' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l backtest-at -d 'Check the estimates on this history: the trials of jobs submitted before TIME (RFC 3339) fit the rates, those of jobs submitted at or after it test them (every job needs `job.submittedAt`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l incidents -d 'Incident windows: `auto` finds the hours in which far more jobs failed than the history\'s own rate explains (an outage) and leaves their failed runs out of what is learned (the estimates\' rates, suggest\'s signatures); `off` finds none (--incident\'s windows still count)' -r -f -a "auto\t''
off\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l incident -d 'A window to leave out of what is learned, by hand (a change window, an outage you know of): `FROM/TO`, two RFC 3339 times; repeatable; merged with a detected window it overlaps' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l contention -d 'Retries while others waited (docs/contention.md): `on` sums, from the record\'s times, what the retries ran while other jobs\' requests waited in their pool, for the record and each side, and says it; `off` leaves the section out and the sums undone; `auto`, the default, is `on` in one process and `off` in a `simulate` or `tune` shard (`--shard`, `--emit`), whose merged output says it was not computed (`suggest` compares in its merge, one process)' -r -f -a "auto\t''
on\t''
off\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l shard -d 'Replay only the jobs of shard I of N (`0/4`: files by byte range, stdin by FNV-1a of the job id, Lookout by a hash in its query, which needs `--to`); with `-o partial`, write the shard\'s part of the answer, which `retryctl merge` adds up' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l categorizer -d 'The executor\'s categorizer config (its `errorCategories`): every candidate classifies failed runs with it, as `simulate --categorizer` does; `--vary \'categorizer:PATH=…\'` varies its fields (`errorCategories.categories[0].action=Retain,Delete`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l baseline-categorizer -d 'The baseline side\'s categorizer config, or `recorded` to keep the categories the runs were recorded with (without --baseline: --categorizer, as written; with one, needed when --categorizer is given)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l max-lost -d 'Recommend no candidate that loses more than N jobs the baseline saved (Succeeded → Failed)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l max-compute -d 'Recommend no candidate whose cost (compute added − removed + expected) is over this: a duration (`10h`), or a percentage of the baseline\'s recorded compute (`5%`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l max-contradictions -d 'Recommend nothing when more jobs than this contradict the baseline (it is then not what the cluster ran): a number of jobs (`5`), or a percentage of the jobs compared' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l max-candidates -d 'Refuse (exit 2, before any replay) a search of more candidates than N' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l pick -d 'Print candidate ID\'s documents (`recommended`: the recommended one\'s; `template`: the one whose varied values are the template\'s own, exit 1 when none is) as YAML, ready for `retryctl apply -f`; a numbered one needs no history (given one, the search runs first, and a candidate that loses a job the baseline saves or breaks a constraint is refused, exit 1, unless --force)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -s o -l output -d 'Output format: html is one self-contained page (the frontier as a chart), markdown a table for a pull request, partial a shard\'s part for `retryctl merge` (with --shard); --pick writes yaml' -r -f -a "table\t''
json\t''
yaml\t''
html\t''
markdown\t''
partial\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l output-file -d 'Write the result to this file instead of stdout: written beside it and renamed once complete; left as it was when no result is written' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l emit -d 'Print, instead of running, the documents that run this command as --shard-count shards plus their merge: an `armadactl submit` file, or a Kubernetes Indexed Job' -r -f -a "armada\t''
kubernetes\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l shard-count -d 'With --emit: the number of shards (1 to 1,000,000)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l image -d 'With --emit: the container image; its entrypoint must be retryctl (the repository\'s Dockerfile)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l volume -d 'With --emit: the PersistentVolumeClaim every job mounts at MOUNT (ReadWriteMany): the inputs lie under MOUNT, the partials and the result are written there' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l armada-queue -d 'With --emit armada: the Armada queue the jobs are submitted to (--queue is Lookout\'s)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l emit-job-set -d 'With --emit: the Armada job set, or the Kubernetes Job\'s name (the merge\'s is NAME-merge)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l job-set -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l namespace -d 'With --emit: the Kubernetes namespace of the jobs (Armada\'s default: `default`; Kubernetes\': kubectl\'s)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l requests -d 'With --emit: each job\'s resources, requested and limited alike (default: cpu=1,memory=1Gi)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l dsn-secret -d 'With --emit and --lookout-db: the Secret holding the DSN (key `dsn` unless given); the jobs get it as $LOOKOUT_DB and the DSN given here is never written out' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l since -d 'With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l from -d 'With --lookout-db: only jobs submitted at or after this RFC 3339 time' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l to -d 'With --lookout-db: only jobs submitted before this RFC 3339 time' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l engine -d 'Which engine the candidates run under: the design (docs/engines.md) or what upstream Armada ships today (first policy only, categories only, preemption terminal, no backoff)' -r -f -a "design\t''
upstream\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l baseline-from-cluster -d 'What-if against what the cluster runs: the baseline is the retry policies and queue attachments stored in the --lookout-db database'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l allow-empty -d 'Exit 0 when the history holds no job (an empty file, directory, stdin or Lookout window), instead of 3'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l skip-invalid -d 'Read past the job lines of the history that cannot be read (each said as a warning), say how many, and exit 0; without it they make the exit status 3'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l force -d 'With --pick ID (or template) and a history: write the candidate even when it loses a job the baseline saves or breaks a constraint (a warning says which)'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l exit-code -d 'Exit 1 when a candidate is recommended (a change worth making), with or without --pick'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand tune" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l history -d 'A FailureHistory file, a JSON Lines file of histories, a directory of them, or `-`' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l lookout-db -d 'Replay a real cluster\'s history straight from Lookout\'s PostgreSQL database (as `retryctl history --lookout-db` reads it, no file in between); needs --queue, and --jobset, --since, --from, --to select as for `history`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l jobset -d 'With --lookout-db: only jobs of this job set' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l baseline-engine -d 'The engine of the baseline side (default: the same as --engine)' -r -f -a "design\t''
upstream\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l scheduler-config -d 'An Armada scheduler config file (its `scheduling.retryPolicy` block is used)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l retry-policy -d 'Policies for jobs whose queue is not among the documents (comma separated, in order)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l global-max-retries -d 'Override the scheduler\'s globalMaxRetries' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l default-policy -d 'Override the scheduler\'s defaultPolicyName' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l incidents -d 'Incident windows: `auto` finds the hours in which far more jobs failed than the history\'s own rate explains (an outage) and leaves their failed runs out of what is learned (the estimates\' rates, suggest\'s signatures); `off` finds none (--incident\'s windows still count)' -r -f -a "auto\t''
off\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l incident -d 'A window to leave out of what is learned, by hand (a change window, an outage you know of): `FROM/TO`, two RFC 3339 times; repeatable; merged with a detected window it overlaps' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l contention -d 'Retries while others waited (docs/contention.md): `on` sums, from the record\'s times, what the retries ran while other jobs\' requests waited in their pool, for the record and each side, and says it; `off` leaves the section out and the sums undone; `auto`, the default, is `on` in one process and `off` in a `simulate` or `tune` shard (`--shard`, `--emit`), whose merged output says it was not computed (`suggest` compares in its merge, one process)' -r -f -a "auto\t''
on\t''
off\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l categorizer -d 'The executor\'s categorizer config as deployed (its `errorCategories`): the baseline classifies failed runs with it; with --engine upstream the proposed categorizer keeps its categories after the new ones' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l min-trials -d 'A signature needs this many trials (failed runs followed by another run) for a rule of its own' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l futile -d 'A retry pays when at least this share of trials succeeds (0 < P < 1): the limit is the deepest depth that pays; a signature none of whose depths pays gets Fail' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l max-limit -d 'The largest limit proposed (1 to 10000)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l executor-config -d 'With --engine upstream: also write the proposed executor config alone to FILE, as deployed (the deployed file\'s other keys kept), to roll out before the policy' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l executor-config-format -d 'The shape of --executor-config\'s FILE: `config` (the executor\'s config file) or `helm` (the executor chart\'s values, the config under `applicationConfig:`)' -r -f -a "config\t''
helm\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l max-contradictions -d 'Reject the proposal when more jobs than this contradict today\'s policy (it is then not what the cluster ran): a number of jobs (`5`), or a percentage of the jobs compared' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l name -d 'The proposed policy\'s name' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -s o -l output -d 'Output format: html is one self-contained page, markdown a report for a pull request, policy the proposed documents alone (ready for `validate`, `tune -f` and `apply -f`), partial a shard\'s learning for `retryctl merge` (with --shard)' -r -f -a "table\t''
json\t''
yaml\t''
html\t''
markdown\t''
policy\t''
partial\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l output-file -d 'Write the result to this file instead of stdout: written beside it and renamed once complete; left as it was when no result is written' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l emit -d 'Print, instead of running, the documents that run this command as --shard-count shards plus their merge: an `armadactl submit` file, or a Kubernetes Indexed Job' -r -f -a "armada\t''
kubernetes\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l shard-count -d 'With --emit: the number of shards (1 to 1,000,000)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l image -d 'With --emit: the container image; its entrypoint must be retryctl (the repository\'s Dockerfile)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l volume -d 'With --emit: the PersistentVolumeClaim every job mounts at MOUNT (ReadWriteMany): the inputs lie under MOUNT, the partials and the result are written there' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l armada-queue -d 'With --emit armada: the Armada queue the jobs are submitted to (--queue is Lookout\'s)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l emit-job-set -d 'With --emit: the Armada job set, or the Kubernetes Job\'s name (the merge\'s is NAME-merge)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l job-set -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l namespace -d 'With --emit: the Kubernetes namespace of the jobs (Armada\'s default: `default`; Kubernetes\': kubectl\'s)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l requests -d 'With --emit: each job\'s resources, requested and limited alike (default: cpu=1,memory=1Gi)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l dsn-secret -d 'With --emit and --lookout-db: the Secret holding the DSN (key `dsn` unless given); the jobs get it as $LOOKOUT_DB and the DSN given here is never written out' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l since -d 'With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l from -d 'With --lookout-db: only jobs submitted at or after this RFC 3339 time' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l to -d 'With --lookout-db: only jobs submitted before this RFC 3339 time' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l queue -d 'With --lookout-db: the jobs of this queue; with -o policy, also print this Queue with the proposal first in its retryPolicies' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l baseline -d 'The policies the cluster runs today (files, directories): what the proposal is compared with, and whose first policy gives its defaultAction and retryLimit (none: no policy)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l shard -d 'Learn from shard I of N\'s share of the history only (`0/4`: a file or directory by byte range; not stdin nor --lookout-db, which its merge could not read again); with -o partial, write what it learned for `retryctl merge`, which proposes and compares over the whole history' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l engine -d 'The dialect of the proposal and the engine that replays it: design (one RetryPolicy) or upstream (what Armada ships today: an executor categorizer config and a v1beta1 policy)' -r -f -a "design\t''
upstream\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l backtest-at -d 'Learn from the jobs submitted before TIME (RFC 3339) and report the proposal\'s effect on the jobs submitted at or after it alone (every job needs `job.submittedAt`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l baseline-from-cluster -d 'What-if against what the cluster runs: the baseline is the retry policies and queue attachments stored in the --lookout-db database'
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l allow-empty -d 'Exit 0 when the history holds no job (an empty file, directory, stdin or Lookout window), instead of 3'
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l skip-invalid -d 'Read past the job lines of the history that cannot be read (each said as a warning), say how many, and exit 0; without it they make the exit status 3'
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l extrapolate -d 'A depth with fewer than 5 trials of its own reads the signature\'s overall share instead of ending the limit (every such limit is marked `extrapolated`)'
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l keep-categorizer -d 'With --engine upstream: keep every category of today\'s executor config as it is (no category split, no action changed), adding categories only after them, for failures none of them takes: the way past a split that costs another queue its jobs'
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l exit-code
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand suggest" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -s o -l output -d 'Output format: the command\'s own (`tune` and `suggest` have no jsonl; `policy` is `suggest`\'s alone)' -r -f -a "table\t''
json\t''
yaml\t''
jsonl\t''
html\t''
markdown\t''
policy\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -l output-file -d 'Write the result to this file instead of stdout: written beside it and renamed once complete; left as it was when no result is written' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand merge" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l listen -d 'Address to listen on' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l db -d 'SQLite database file (default: <data dir>/retryctl/armada.db)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l basic-auth -d 'Require HTTP basic auth with this `user:password` (repeatable)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l token -d 'Require this bearer token (repeatable)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l basic-auth-file -d 'Read accepted `user:password` lines from FILE (kept out of argv and `ps`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l token-file -d 'Read accepted bearer tokens, one per line, from FILE' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l tls-cert -d 'Serve HTTPS with this certificate chain (PEM, leaf first); needs --tls-key' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l tls-key -d 'The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l dialect -d 'How retry policies are taken and answered: `v1` (the design dialect, marked by the `Armada-Retry-Policy-Dialect` header) or `upstream` (as today\'s Armada: its flat JSON, its validation and messages, no header), to rehearse an upstream rollout' -r -f -a "v1\t''
upstream\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l in-memory -d 'Keep everything in memory; nothing survives a restart'
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l allow-anonymous -d 'Allow listening on a non-loopback address without authentication'
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand serve" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand completion" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -f -a "view" -d 'Print the config file with secrets masked'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -f -a "get-contexts" -d 'List the contexts, marking the current one'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -f -a "current-context" -d 'Print the current context'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -f -a "use-context" -d 'Make NAME the current context (rewrites the file, keeping every other key)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and not __fish_seen_subcommand_from view get-contexts current-context use-context help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from view" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from get-contexts" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from current-context" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from use-context" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from help" -f -a "view" -d 'Print the config file with secrets masked'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from help" -f -a "get-contexts" -d 'List the contexts, marking the current one'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from help" -f -a "current-context" -d 'Print the current context'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from help" -f -a "use-context" -d 'Make NAME the current context (rewrites the file, keeping every other key)'
complete -c retryctl -n "__fish_retryctl_using_subcommand config; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -s o -l output -d 'Output format' -r -f -a "text\t''
json\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -l client -d 'Print only the client version; do not contact the server'
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand version" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l scheduler-config -d 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retrypolicy" -d 'Describe retry policies'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retry-policy" -d 'Describe retry policies'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retrypolicies" -d 'Describe retry policies'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "retry-policies" -d 'Describe retry policies'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "rp" -d 'Describe retry policies'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "queue" -d 'Describe queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "queues" -d 'Describe queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "q" -d 'Describe queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and not __fish_seen_subcommand_from retrypolicy retry-policy retrypolicies retry-policies rp queue queues q help" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -l scheduler-config -d 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -l scheduler-config -d 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policy" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -l scheduler-config -d 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retrypolicies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -l scheduler-config -d 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from retry-policies" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -l scheduler-config -d 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from rp" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -l scheduler-config -d 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queue" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -l scheduler-config -d 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from queues" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -s f -l filename -d 'A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -l scheduler-config -d 'An Armada scheduler config: its globalMaxRetries and defaultBackoff are used' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -s R -l recursive -d 'Descend into subdirectories of directories given with -f'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from q" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from help" -f -a "retrypolicy" -d 'Describe retry policies'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from help" -f -a "queue" -d 'Describe queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand describe; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l api-version -d 'The layout to explain: `armadaproject.io/v1` (a RetryPolicy\'s design dialect) or `armadaproject.io/v1beta1` (upstream\'s flat one)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l recursive -d 'Show every field below, not only the direct ones'
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand explain" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand schema" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l queue -d 'Only jobs of this queue (default: every queue\'s, each job with its own queue: the week a changed categorizer is compared on)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l jobset -d 'Only jobs of this job set' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l job -d 'Only this job (repeatable)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l since -d 'Only jobs submitted within this duration before now (`7d`, `36h`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l from -d 'Only jobs submitted at or after this RFC 3339 time' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l to -d 'Only jobs submitted before this RFC 3339 time' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l lookout-db -d 'Lookout\'s PostgreSQL database (`postgresql://user:password@host:5432/lookout`); without a value, or without --lookout-url either: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l lookout-url -d 'Lookout\'s REST API (`http://lookout:10000`); auth as for the Armada API' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l categorizer -d 'The executor\'s categorizer config as deployed (its `errorCategories`): the hint its rules append to a run\'s error text is taken off the texts of the runs it classified' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -s o -l output -d 'Output format: one JSON document a line, or YAML documents' -r -f -a "jsonl\t''
yaml\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l output-file -d 'Write to this file instead of stdout: written beside it and renamed once complete; left as it was when the export fails' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l strict -d 'Exit 1 after the export when a row was left out because it could not be read (each is reported on stderr either way)'
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l allow-empty -d 'Exit 0 when no job matches (an empty export), instead of 3'
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand history" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l lookout-db -d 'Lookout\'s PostgreSQL database (`postgresql://user:password@host:5432/lookout`); without the flag or without a value: $LOOKOUT_DB' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l queue -d 'A queue to watch (repeatable); default: the queues of the Queue documents of --baseline and -f' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l baseline -d 'Today\'s policy: the RetryPolicy and Queue documents the cluster runs (files, directories), and its categorizer document if it has one' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -s f -l filename -d 'A candidate (a file or a directory), replayed in the shadow of today\'s policy and labelled by its base name (repeatable: one candidate each)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l categorizer -d 'The candidates\' categorizer config (the executor\'s `errorCategories`), for those whose files hold none; the baseline then needs its own (--baseline-categorizer)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l baseline-categorizer -d 'Today\'s categorizer config, or `recorded` to keep the categories the runs were recorded with (never --categorizer\'s)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l engine -d 'The engine of the candidates: design or upstream (default: as the documents\' dialect picks, docs/engines.md)' -r -f -a "design\t''
upstream\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l baseline-engine -d 'The engine of today\'s policy (default: the same as --engine)' -r -f -a "design\t''
upstream\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l scheduler-config -d 'An Armada scheduler config file (its `scheduling.retryPolicy` block is used)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l retry-policy -d 'Policies for jobs whose queue is not among the documents (comma separated, in order)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l global-max-retries -d 'Override the scheduler\'s globalMaxRetries' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l default-policy -d 'Override the scheduler\'s defaultPolicyName' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l listen -d 'Serve /metrics, /report and /healthz on this address' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l state -d 'The file the cursor, the jobs counted of the last --lookback and every counter are kept in (written after each poll); a restart resumes from it' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l since -d 'Where a fresh --state starts: jobs that reached a terminal state since this duration before now (`7d`, `36h`) or this RFC 3339 time (default: now)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l poll -d 'How long to wait between polls (a Go duration: `30s`, `1m`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l window -d 'The jobs /report replays and each candidate\'s verdict is judged on: those that reached a terminal state within this duration before now (`7d`, `36h`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l lookback -d 'How far behind its cursor each poll reads again, for the rows Lookout ingests late (a Go duration: `5m`, `15m`; at most --window)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l settle -d 'How long a job read terminal waits for its runs (Lookout writes them after the job\'s state) before it is counted as its record stands (a Go duration: `10m`, `1h`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l min-jobs -d 'Below this many jobs with a failed run in the window, a candidate\'s verdict is `inconclusive`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l max-contradictions -d 'How many jobs (or what share of them, `1%`) of the window may contradict today\'s policy before a candidate\'s verdict is `reject`: past it, today\'s policy is not what the cluster runs' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l emit -d 'Print, instead of watching, the Kubernetes Deployment that runs this command line' -r -f -a "kubernetes\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l image -d 'With --emit: the container image; its entrypoint must be retryctl (the repository\'s Dockerfile)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l volume -d 'With --emit: the PersistentVolumeClaim the pod mounts at MOUNT: the policies lie under MOUNT and --state is written there' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l dsn-secret -d 'With --emit: the Secret holding the DSN (key `dsn` unless given); the pod gets it as $LOOKOUT_DB and the DSN is never written out' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l namespace -d 'With --emit: the Deployment\'s namespace (default: kubectl\'s)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l requests -d 'With --emit: the container\'s resources, requested and limited alike (default: cpu=1,memory=256Mi)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l armada-url -d 'Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://) (default: $ARMADA_URL, the context\'s `armadaRestUrl` or gRPC `armadaUrl`, then http://localhost:8080)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -s c -l context -d 'Context of the config file to use instead of its `currentContext`' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l config -d 'Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l timeout -d 'Timeout of each request to the server, as a duration (`10s`, `500ms`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l token -d 'Bearer token to send; wins over every other credential (`--token-file` keeps it out of `ps`)' -r
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l token-file -d 'Send the bearer token held in FILE (one line)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l certificate-authority -d 'Also trust the CA certificates of this PEM file for `https://` (default: the context\'s `certificateAuthority`)' -r -F
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -s R -l recursive -d 'Descend into subdirectories of the directories given'
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -l insecure-skip-tls-verify -d 'Do not verify the server\'s TLS certificate (insecure: warns on every run)'
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -s v -l verbose -d 'Log each request and its status to stderr (credentials are never printed)'
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retryctl -n "__fish_retryctl_using_subcommand watch" -s V -l version -d 'Print version'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "validate" -d 'Parse, validate and lint documents offline (what each check means: docs/policies.md)'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "create" -d 'Create every document of the files (fails on an existing name), or a queue from flags'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "get" -d 'Show retry policies or queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "update" -d 'Replace existing resources from files, or change a queue in place'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "apply" -d 'Create or update every document of the files'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "diff" -d 'Show how the files differ from the server (exit 0 same, 1 different)'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "delete" -d 'Delete retry policies or queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "simulate" -d 'Replay failure histories through the retry evaluator'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "tune" -d 'Search retry-policy candidates on a history: which policy should this cluster run?'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "suggest" -d 'Learn a retry policy from the cluster\'s own failures, and prove it on the same history'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "merge" -d 'Add up a sharded simulate, tune or suggest (`--shard I/N -o partial`) into one answer'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "serve" -d 'Run a local Armada-compatible API server with SQLite storage'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "completion" -d 'Print a shell completion script'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "config" -d 'Show or change the armadactl config file'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "version" -d 'Print the client version, and the server\'s dialect when it is reachable'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "describe" -d 'Explain a retry policy or queue in words: limits, backoff schedule, who uses it'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "explain" -d 'Document the fields of a resource (`retrypolicy.spec.rules`)'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "schema" -d 'Print the JSON Schema (draft 2020-12) of a document kind, for editors'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "history" -d 'Export a real cluster\'s failure history from Armada\'s Lookout as FailureHistory documents'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "watch" -d 'Today\'s policy and candidates on Lookout\'s live record, as Prometheus metrics'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and not __fish_seen_subcommand_from validate create get update apply diff delete simulate tune suggest merge serve completion config version describe explain schema history watch help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from create" -f -a "queue" -d 'Create a queue from flags'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from create" -f -a "retrypolicy" -d 'Create retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from get" -f -a "retrypolicy" -d 'Retry policies: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from get" -f -a "queue" -d 'Queues: one or more by name, or all'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from update" -f -a "queue" -d 'Change a queue in place: flags not given keep their values'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from update" -f -a "retrypolicy" -d 'Replace retry policies from files (only RetryPolicy documents are accepted)'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from delete" -f -a "retrypolicy" -d 'Delete retry policies. A policy still attached to queues is refused unless --detach'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from delete" -f -a "queue" -d 'Delete queues'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from config" -f -a "view" -d 'Print the config file with secrets masked'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from config" -f -a "get-contexts" -d 'List the contexts, marking the current one'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from config" -f -a "current-context" -d 'Print the current context'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from config" -f -a "use-context" -d 'Make NAME the current context (rewrites the file, keeping every other key)'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from describe" -f -a "retrypolicy" -d 'Describe retry policies'
complete -c retryctl -n "__fish_retryctl_using_subcommand help; and __fish_seen_subcommand_from describe" -f -a "queue" -d 'Describe queues'
