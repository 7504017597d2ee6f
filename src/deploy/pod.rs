//! What every pod the documents run shares: the user it runs as, the variables Kubernetes
//! sets or expands in its args (the DSN, an Indexed Job's index), how many run at once, and
//! how an argument is written so that Kubernetes' own `$(VAR)` expansion leaves it as it is.
//!
//! Owns: those constants, [`escape`] and [`expand`]. Must not: do I/O.

/// The most pods an Indexed Job may run at once (Kubernetes refuses a larger `parallelism`):
/// past it, the shards run in waves.
pub const MAX_PARALLELISM: u64 = 100_000;

/// The uid and gid of the image's non-root user (the repository's Dockerfile): the pods'
/// `fsGroup`, so that the volume is writable by it.
pub const NON_ROOT: u64 = 65532;

/// The environment variable the jobs read the DSN from (Kubernetes expands `$(LOOKOUT_DB)`
/// in the args from it).
pub const DSN_VAR: &str = "LOOKOUT_DB";

/// The environment variable Kubernetes sets to a pod's index in an Indexed Job.
pub const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// `text` as a container's argument that Kubernetes leaves as it is: it expands `$(VAR)`
/// and turns `$$` into `$`, so every `$` is doubled.
pub fn escape(text: &str) -> String {
    text.replace('$', "$$")
}

/// What Kubernetes makes of a container's argument (its `$(VAR)` expansion, as the kubelet
/// does it): `$(NAME)` is `var(NAME)`'s value, or left as written when it has none; `$$` is
/// `$`; any other `$` stays. The inverse of [`escape`] for text without variables.
pub fn expand(text: &str, var: &dyn Fn(&str) -> Option<String>) -> String {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && i + 1 < bytes.len() {
            out.push_str(&text[copied..i]);
            match bytes[i + 1] {
                b'$' => {
                    out.push('$');
                    i += 2;
                }
                b'(' => match text[i + 2..].find(')') {
                    Some(end) => {
                        let name = &text[i + 2..i + 2 + end];
                        match var(name) {
                            Some(v) => out.push_str(&v),
                            None => out.push_str(&text[i..i + 3 + end]),
                        }
                        i += 3 + end;
                    }
                    None => {
                        out.push_str("$(");
                        i += 2;
                    }
                },
                _ => {
                    out.push('$');
                    i += 1;
                }
            }
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}
