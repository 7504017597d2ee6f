//! The emit flags' values, checked (exit 2 naming the flag): `--image`, `--volume`,
//! `--requests`, `--dsn-secret`, Kubernetes' names, and where the containers see a path of the
//! command line (under the volume's mount).
//!
//! Owns: those parsers and checks. Must not: do I/O.

use std::path::{Component, Path, PathBuf};

use crate::error::CliError;

/// `--image IMAGE`, which every emitted document needs: the image `runs` (who runs it).
pub fn required_image(image: Option<&str>, runs: &str) -> Result<String, CliError> {
    match image {
        Some(i) if !i.trim().is_empty() => Ok(i.to_string()),
        _ => Err(CliError::usage(format!(
            "`--emit` needs `--image IMAGE`: the container image {runs}, its entrypoint retryctl"
        ))),
    }
}

/// `--volume CLAIM:MOUNT`, which every emitted document needs: the claim that `holds` (what,
/// where it is mounted, an example).
pub fn required_volume(volume: Option<&str>, holds: &str) -> Result<(String, String), CliError> {
    let Some(volume) = volume else {
        return Err(CliError::usage(format!(
            "`--emit` needs `--volume CLAIM:MOUNT`: the PersistentVolumeClaim that {holds}"
        )));
    };
    parse_volume(volume)
}

/// `CLAIM:MOUNT`.
pub fn parse_volume(text: &str) -> Result<(String, String), CliError> {
    let bad = |why: &str| {
        CliError::usage(format!(
            "invalid `--volume` `{text}`: {why} (expected `CLAIM:MOUNT`, a PersistentVolumeClaim and the absolute path the jobs mount it at, such as `retryctl-sweep:/data`)"
        ))
    };
    let (claim, mount) = text.split_once(':').ok_or_else(|| bad("no `:`"))?;
    check_subdomain(claim).map_err(|why| bad(&format!("the claim's name: {why}")))?;
    let path = Path::new(mount);
    if !path.is_absolute() {
        return Err(bad("the mount path is not absolute"));
    }
    let normal = normalise(path).ok_or_else(|| bad("the mount path goes up with `..`"))?;
    if normal.parent().is_none() {
        return Err(bad("the mount path is `/`"));
    }
    let normal = normal
        .to_str()
        .ok_or_else(|| bad("the mount path is not UTF-8"))?
        .to_string();
    Ok((claim.to_string(), normal))
}

/// Lowercase letters, digits and `-`, a letter or digit at each end, at most `max` bytes:
/// a Kubernetes name (DNS-1123 label).
pub fn check_name(name: &str, max: usize) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err("expected lowercase letters, digits and `-`, starting and ending with a letter or digit".into())
    }
}

/// Labels of [`check_name`] joined by `.`, at most 253 bytes: the name of a
/// PersistentVolumeClaim or a Secret (DNS-1123 subdomain).
pub fn check_subdomain(name: &str) -> Result<(), String> {
    let ok = !name.is_empty() && name.len() <= 253 && name.split('.').all(|label| check_name(label, 63).is_ok());
    if ok {
        Ok(())
    } else {
        Err("expected lowercase letters, digits, `-` and `.`, each part between dots starting and ending with a letter or digit, at most 253 characters".into())
    }
}

/// `NAME=QUANTITY,…`: Kubernetes resource names and quantities.
pub fn parse_requests(text: &str) -> Result<Vec<(String, String)>, CliError> {
    let bad = |why: String| {
        CliError::usage(format!(
            "invalid `--requests` `{text}`: {why} (expected NAME=QUANTITY pairs separated by commas, such as `cpu=2,memory=4Gi`)"
        ))
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in text.split(',') {
        let (name, quantity) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("`{pair}` has no `=`")))?;
        let name_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'));
        if !name_ok {
            return Err(bad(format!("`{name}` is not a resource name")));
        }
        if !is_quantity(quantity) {
            return Err(bad(format!("`{quantity}` is not a quantity (`500m`, `2`, `4Gi`)")));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(bad(format!("`{name}` is given twice")));
        }
        out.push((name.to_string(), quantity.to_string()));
    }
    Ok(out)
}

/// A Kubernetes quantity: a decimal number and an optional suffix (binary `Ki`…`Ei`,
/// decimal `n`, `u`, `m`, `k`, `M`…`E`, or an exponent `e3`).
pub fn is_quantity(text: &str) -> bool {
    let digits = text.trim_start_matches(['+', '-']);
    let number_end = digits
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(digits.len());
    let (number, suffix) = digits.split_at(number_end);
    let number_ok = !number.is_empty() && number != "." && number.matches('.').count() <= 1;
    let suffix_ok = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => true,
        s => s
            .strip_prefix(['e', 'E'])
            .map(|e| e.trim_start_matches(['+', '-']))
            .is_some_and(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())),
    };
    number_ok && suffix_ok
}

/// `NAME[:KEY]`, the key `dsn` when not given.
pub fn parse_secret(text: &str) -> Result<(String, String), CliError> {
    let (name, key) = text.split_once(':').unwrap_or((text, "dsn"));
    check_subdomain(name).map_err(|why| {
        CliError::usage(format!(
            "invalid `--dsn-secret` `{text}`: the Secret's name: {why} (expected `NAME` or `NAME:KEY`)"
        ))
    })?;
    let key_ok = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !key_ok {
        return Err(CliError::usage(format!(
            "invalid `--dsn-secret` `{text}`: the key `{key}` is not a Secret's key (letters, digits, `-`, `_`, `.`)"
        )));
    }
    Ok((name.to_string(), key.to_string()))
}

/// `path` without `.` components; `None` when it has a `..`.
pub fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => return None,
            other => out.push(other),
        }
    }
    Some(out)
}

/// Where the containers see the path `value` of `--flag`: under `mount`, as given when
/// absolute, joined to it when relative.
pub fn container_path(mount: &str, flag: &str, value: &str) -> Result<String, CliError> {
    if value == "-" {
        return Err(CliError::usage(format!(
            "`--{flag} -`: a job has no stdin to read; put the file on the volume and give its path under `{mount}`"
        )));
    }
    let outside = |why: &str| {
        CliError::usage(format!(
            "`--{flag} {value}` {why}: give the path as the containers see it, under the volume's mount `{mount}`, or relative to it"
        ))
    };
    let path = Path::new(value);
    let normal = normalise(path).ok_or_else(|| outside("goes up with `..`"))?;
    let inside = if normal.is_absolute() {
        if !normal.starts_with(mount) {
            return Err(outside("is not under the volume's mount"));
        }
        normal
    } else {
        Path::new(mount).join(normal)
    };
    if inside == Path::new(mount) {
        return Ok(mount.to_string());
    }
    // From UTF-8 words: still UTF-8.
    Ok(inside.to_string_lossy().into_owned())
}
