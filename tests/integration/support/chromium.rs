//! A real browser for the report tests: Debian's `chromium`, headless.
//!
//! - Found at `$CHROMIUM` when set (only there: point it at nothing to see the tests go
//!   without), else `chromium` on PATH, else `/usr/bin/chromium`. When there is none the
//!   tests return early and are named on stderr at the end of the run
//!   ([`super::Missing`]); under `CI=true` that is a failure (`.ci/run` installs the package).
//! - Run as root in a container: `--no-sandbox`; and nothing from the network
//!   (`--disable-background-networking`, no component updates, a fresh profile).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Missing;

/// The browser, or `None` (the calling test is named at the end of the run) when it is not
/// installed.
pub fn chromium() -> Option<PathBuf> {
    let given = std::env::var_os("CHROMIUM").map(PathBuf::from);
    let found = match &given {
        Some(p) => Some(p.clone()).filter(|p| p.is_file()),
        None => std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join("chromium"))
            .find(|p| p.is_file())
            .or_else(|| Some(PathBuf::from("/usr/bin/chromium")).filter(|p| p.is_file())),
    };
    if found.is_none() {
        let what = match &given {
            Some(p) => format!("Chromium not found (no file at `$CHROMIUM`, {})", p.display()),
            None => "Chromium not found (no `chromium` on PATH or in /usr/bin)".to_string(),
        };
        Missing {
            what,
            install: "apt-get install -y chromium".to_string(),
        }
        .skip();
    }
    found
}

fn headless(browser: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// A PNG screenshot of `page` at `width`×`height` CSS pixels.
pub fn screenshot(browser: &Path, page: &Path, width: u32, height: u32) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("shot.png");
    let out = headless(browser, &dir.path().join("profile"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        shot.is_file(),
        "chromium made no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&shot).unwrap()
}

/// The page's DOM after the browser has parsed and laid it out.
pub fn dump_dom(browser: &Path, page: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = headless(browser, &dir.path().join("profile"))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// What of `page` does not fit a window `width` CSS pixels wide, as Chromium lays it out:
/// each element whose box ends right of the window (the page would scroll sideways), each
/// element that clips its own content (`overflow` hidden, auto or scroll, or an ellipsis,
/// narrower than what it holds) and each SVG text that leaves its picture (the SVG clips
/// it). Empty when everything is seen. A copy of the page gets a script that measures
/// after layout and writes the findings into the DOM that `--dump-dom` prints.
pub fn overflow(browser: &Path, page: &Path, width: u32) -> Vec<String> {
    const PROBE: &str = r#"<script>(() => {
  const W = window.innerWidth, out = [];
  const name = (el) => el.tagName.toLowerCase() + (el.getAttribute('class') ? '.' + el.getAttribute('class') : '');
  if (document.documentElement.scrollWidth > W) out.push('page: ' + document.documentElement.scrollWidth + 'px wide');
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
    if (r.right > W + 0.5) out.push('past the window: ' + name(el) + ' ends at ' + Math.round(r.right) + 'px');
    const clips = ['hidden', 'auto', 'scroll', 'clip'].includes(cs.overflowX) || cs.textOverflow === 'ellipsis';
    if (clips && el.scrollWidth > el.clientWidth + 0.5) out.push('cut: ' + name(el) + ' holds ' + el.scrollWidth + 'px in ' + el.clientWidth + 'px');
  }
  for (const t of document.querySelectorAll('svg text')) {
    const s = t.ownerSVGElement.getBoundingClientRect(), r = t.getBoundingClientRect();
    if (r.left < s.left - 0.5 || r.right > s.right + 0.5 || r.top < s.top - 0.5 || r.bottom > s.bottom + 0.5) out.push('cut: svg text `' + t.textContent + '`');
  }
  const pre = document.createElement('pre');
  pre.id = 'retryctl-test-overflow';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
})();</script>"#;
    let html = std::fs::read_to_string(page).unwrap();
    assert!(html.contains("</body>"), "{} has no </body>", page.display());
    let dir = tempfile::tempdir().unwrap();
    let probed = dir.path().join("probed.html");
    std::fs::write(&probed, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let out = headless(browser, &dir.path().join("profile"))
        .arg(format!("--window-size={width},1000"))
        .arg("--dump-dom")
        .arg(format!("file://{}", probed.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8(out.stdout).unwrap();
    let start = "<pre id=\"retryctl-test-overflow\">";
    let found = dom
        .split_once(start)
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(text, _)| text.to_string())
        .unwrap_or_else(|| panic!("the probe did not run: {dom}"));
    found
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&"))
        .collect()
}
