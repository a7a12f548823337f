//! report.html of a real run, rendered by headless Chromium: the charts are drawn (not an
//! empty page) in their colours, one `<svg>` per chart, nothing fetched from elsewhere.
//! Also the other files written as the run goes: timeseries.jsonl and the HDR logs.

use crate::support as common;

use common::{demo_target, only_results_dir, run_at, write_config};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The report's palette (output::charts::colors) as RGB triples.
const BLUE: [u8; 3] = [0x1f, 0x77, 0xb4];
const ORANGE: [u8; 3] = [0xff, 0x7f, 0x0e];
const RED: [u8; 3] = [0xd6, 0x27, 0x28];
const GREEN: [u8; 3] = [0x2c, 0xa0, 0x2c];
const PURPLE: [u8; 3] = [0x94, 0x67, 0xbd];

/// Screenshots `html` with headless Chromium into `png`.
fn screenshot(html: &Path, png: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new("chromium")
        .args([
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
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1200,2400")
        .arg(format!("file://{}", html.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium is installed (apt-get install -y chromium; .ci/run does it)");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium failed: {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish its screenshot in 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Decodes a PNG into RGB pixels.
fn pixels(png: &Path) -> Vec<[u8; 3]> {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect()
}

fn near(p: [u8; 3], c: [u8; 3]) -> bool {
    p.iter().zip(c).all(|(a, b)| a.abs_diff(b) <= 12)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_renders_its_charts_in_chromium() {
    let server = demo_target(Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        r#"
        [scenarios.default]
        executor = "constant-vus"
        vus = 2
        duration = "3s"
        [thresholds]
        http_req_duration = ["p(95)<5000"]
        "#,
    );
    let out = dir.path().join("out");
    let base = server.base_url();
    let outcome = run_at("hello", &config, &[("BASE_URL", &base)], &out).await;
    server.shutdown().await;
    assert_eq!(outcome.exit_code, 0);
    let results = only_results_dir(&out);

    let html = std::fs::read_to_string(results.join("report.html")).unwrap();
    let charts = html.matches("<div class=\"chart\">").count();
    assert_eq!(
        charts, 7,
        "throughput, http latency, VUs, errors, drops (no iteration latency in a closed \
         model), and CPU and memory by service (the generator is always sampled)"
    );
    assert!(html.contains("CPU by service") && html.contains("Memory by service"));
    assert_eq!(html.matches("<svg").count(), charts, "one <svg> per chart");
    assert!(!html.contains("<script"), "no scripts");
    for fetch in ["<link", " src=", "href=", "url(", "@import"] {
        assert!(!html.contains(fetch), "nothing is fetched: found {fetch}");
    }
    assert!(html.contains("p(95)&lt;5000"), "the threshold is listed");

    let png = dir.path().join("report.png");
    screenshot(&results.join("report.html"), &png);
    let px = pixels(&png);
    assert_eq!(px.len(), 1200 * 2400);
    let non_white = px.iter().filter(|p| p.iter().any(|c| *c < 235)).count();
    let share = non_white as f64 / px.len() as f64;
    assert!(
        share > 0.03,
        "the page has content: {:.1}% non-white",
        share * 100.0
    );
    for (name, colour) in [
        ("blue", BLUE),
        ("orange", ORANGE),
        ("red", RED),
        ("green", GREEN),
        ("purple", PURPLE),
    ] {
        let n = px.iter().filter(|p| near(**p, colour)).count();
        assert!(n >= 150, "{name} is drawn ({n} pixels)");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_series_and_histogram_logs_cover_every_second() {
    let server = demo_target(Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"3s\"\n",
    );
    let out = dir.path().join("out");
    let base = server.base_url();
    let outcome = run_at("hello", &config, &[("BASE_URL", &base)], &out).await;
    server.shutdown().await;
    let results = only_results_dir(&out);
    let summary = common::summary_json(&results);
    let total_requests = summary["metrics"]["http_reqs"]["count"].as_f64().unwrap();
    assert!(total_requests > 0.0);
    assert_eq!(outcome.exit_code, 0);

    // timeseries.jsonl: per-second lines whose counts add up to the summary's totals.
    let text = std::fs::read_to_string(results.join("timeseries.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reqs: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["metric"] == "http_reqs")
        .collect();
    assert!(reqs.len() >= 3, "about one line per second: {}", reqs.len());
    let sum: f64 = reqs.iter().map(|l| l["count"].as_f64().unwrap()).sum();
    assert_eq!(sum, total_requests);
    let durations: u64 = lines
        .iter()
        .filter(|l| l["metric"] == "http_req_duration")
        .map(|l| {
            assert_eq!(l["type"], "trend");
            assert!(l["p99"].as_f64().unwrap() >= l["p50"].as_f64().unwrap());
            l["count"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(durations as f64, total_requests);
    assert!(lines
        .iter()
        .any(|l| l["metric"] == "vus" && l["type"] == "gauge"));

    // The HDR log of http_req_duration holds every sample, interval by interval.
    let log = std::fs::read(results.join("histograms/http_req_duration.hlog")).unwrap();
    let mut merged = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    let mut intervals = 0;
    for entry in IntervalLogIterator::new(&log) {
        if let LogEntry::Interval(i) = entry.unwrap() {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(i.encoded_histogram())
                .unwrap();
            let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                .deserialize(&mut &bytes[..])
                .unwrap();
            merged.add(&h).unwrap();
            intervals += 1;
        }
    }
    assert!(intervals >= 3, "{intervals}");
    assert_eq!(merged.len() as f64, total_requests);
    let p95_ms = merged.value_at_quantile(0.95) as f64 / 1000.0;
    let summary_p95 = summary["metrics"]["http_req_duration"]["p95"]
        .as_f64()
        .unwrap();
    assert!(
        (p95_ms - summary_p95).abs() < 1e-9,
        "merging the logs gives the summary's p95 exactly: {p95_ms} vs {summary_p95}"
    );
}
