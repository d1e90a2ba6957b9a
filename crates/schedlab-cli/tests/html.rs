//! The HTML report in a real browser: headless Chromium loads the page
//! with no console message, its script runs to the end, and a screenshot
//! shows the plots in the schedulers' colours. Skips, saying why, where
//! Chromium is not installed (`apt-get install chromium`), except under CI
//! (CI=true), where .ci/run installs it and the test fails without it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Says that a test skips, where `cargo test` shows it without
/// --nocapture: the harness captures the print macros, not writes to the
/// stderr handle itself.
fn skip(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {}: {why}", std::thread::current().name().unwrap_or("a test"));
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"].iter().find_map(|name| {
        let out = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output().ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
    })
}

fn headless(browser: &Path, profile: &Path, args: &[&str], page: &Path) -> (String, String) {
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Pixels of the screenshot within a small distance of `rgb`.
fn pixels_near(png_path: &Path, rgb: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png_path).expect("screenshot")));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("sized")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    buf[..info.buffer_size()]
        .chunks(channels)
        .filter(|p| p.iter().zip(rgb).take(3).all(|(a, b)| (*a as i32 - b as i32).abs() <= 6))
        .count()
}

#[test]
fn report_loads_in_chromium_without_console_messages_and_shows_plots() {
    let Some(browser) = chromium() else {
        // .ci/run installs Chromium: under CI a skip would hide that it
        // could not, and the page would go untested.
        assert!(std::env::var_os("CI").is_none(), "CI must run the browser test, but Chromium is not installed");
        skip("Chromium is not installed (apt-get install chromium)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("schedlab-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let page = dir.join("report.html");
    let status = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["compare", "lat-ctx", "--duration", "300ms", "--sched", "cfs,eevdf,bfs", "--html"])
        .arg(&page)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("schedlab runs");
    assert!(status.success());

    let profile = dir.join("profile");
    let (dom, log) = headless(&browser, &profile, &["--dump-dom"], &page);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(dom.contains("data-schedlab-ready=\"3\""), "the page's script did not run to its end");

    let shot = dir.join("report.png");
    let (_, log) =
        headless(&browser, &profile, &["--window-size=1200,2400", &format!("--screenshot={}", shot.display())], &page);
    assert!(shot.exists(), "no screenshot: {log}");
    // cfs, eevdf and bfs are the palette's first three colours: their
    // histogram bars and share bars must be on screen.
    for (name, rgb) in [("cfs", [0x4e, 0x79, 0xa7]), ("eevdf", [0xf2, 0x8e, 0x2b]), ("bfs", [0xe1, 0x57, 0x59])] {
        let n = pixels_near(&shot, rgb);
        assert!(n > 500, "{name}'s plots are not in the screenshot ({n} pixels of its colour)");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
