//! `schedlab compare --html`: one self-contained page (inline CSS, SVG and
//! a few lines of script, nothing fetched) with the comparison table, the
//! wakeup-latency and run-time-per-switch histograms on shared log axes,
//! per-task CPU share and a CPU timeline per scheduler.

use crate::render::svg;
use crate::render::us;
use schedlab_sim::Report;
use schedlab_sim::report::timeline::Schedule;
use schedlab_sim::time::format_duration;
use std::fmt::Write;

/// Per-task bars are drawn up to this many tasks; beyond, one bar per
/// [[task]] entry (its tasks' average).
const MAX_TASK_BARS: usize = 64;

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}\
table{border-collapse:collapse;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}\
th{cursor:pointer;background:#f2f2f2}td:first-child,th:first-child{text-align:left}\
h2{margin-top:32px;border-bottom:1px solid #ccc}.note{color:#555;font-size:13px}svg{display:block;margin:8px 0}";

/// Clicking a column header sorts the table by it (numbers numerically).
const SCRIPT: &str = r#"
document.querySelectorAll('table.sortable th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var body = th.closest('table').tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var asc = th.dataset.asc !== '1';
    th.dataset.asc = asc ? '1' : '0';
    var key = function (r) {
      var t = r.cells[col].textContent;
      var n = parseFloat(t);
      return isNaN(n) ? t : n;
    };
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      var c = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
// Tells a test driving a headless browser that the script ran to its end.
document.body.dataset.schedlabReady = String(JSON.parse(document.getElementById('schedlab-reports').textContent).length);
"#;

fn comparison_table(reports: &[Report]) -> String {
    let mut out = String::from(
        "<table class=\"sortable\"><thead><tr><th>scheduler</th><th>ctxsw/s</th><th>invol/s</th><th>migr/s</th>\
         <th>share min %</th><th>share avg %</th><th>share max %</th><th>Jain/kind</th><th>wake avg us</th>\
         <th>wake p99 us</th><th>wake max us</th><th>run/switch p50 us</th><th>runs/s</th><th>makespan ms</th>\
         <th>util %</th></tr></thead><tbody>",
    );
    for r in reports {
        let t = &r.totals;
        let secs = r.duration_ns.max(1) as f64 / 1e9;
        let (smin, savg, smax) = r.share_range().unwrap_or((0.0, 0.0, 0.0));
        let w = &r.wakeup_latency;
        let wake = |v: u64| if w.count == 0 { "-".to_string() } else { us(v) };
        let rps = &r.runtime_per_switch;
        let source = if r.source == "host" { " (real kernel)" } else { "" };
        let jain = t.jain_fairness_min_spec.map_or("-".into(), |j| format!("{j:.3}"));
        let _ = write!(
            out,
            "<tr><td>{}{source}</td><td>{:.0}</td><td>{:.0}</td><td>{:.1}</td><td>{smin:.1}</td><td>{savg:.1}</td>\
             <td>{smax:.1}</td><td>{jain}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td>\
             <td>{:.1}</td></tr>",
            svg::esc(&r.scheduler),
            t.context_switches_per_sec,
            t.involuntary_switches as f64 / secs,
            t.migrations as f64 / secs,
            wake(w.mean),
            wake(w.p99),
            wake(w.max),
            if rps.count == 0 { "-".into() } else { us(rps.p50) },
            t.throughput_runs_per_sec,
            t.makespan_ns.map_or("-".into(), |m| format!("{:.1}", m as f64 / 1e6)),
            t.utilization_pct,
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// Bars of CPU share: per task when there are few, else per [[task]] entry.
fn share_panels(reports: &[Report]) -> (Vec<svg::BarPanel>, bool) {
    let per_task = reports.iter().all(|r| r.tasks.len() <= MAX_TASK_BARS);
    let panels = reports
        .iter()
        .map(|r| {
            // specs[] lists the entries that have tasks, in entry order.
            let mut entries: Vec<u32> = r.tasks.iter().map(|t| t.spec).collect();
            entries.sort_unstable();
            entries.dedup();
            let spec_name = |t: &schedlab_sim::report::TaskReport| {
                let k = entries.binary_search(&t.spec).unwrap_or(0);
                r.specs.get(k).map_or(String::new(), |s| s.name.clone())
            };
            let bars = if per_task {
                r.tasks
                    .iter()
                    .map(|t| svg::Bar { label: t.name.clone(), group: spec_name(t), value: t.cpu_share_pct })
                    .collect()
            } else {
                r.specs
                    .iter()
                    .map(|s| svg::Bar {
                        label: format!("{} (avg of {})", s.name, s.tasks),
                        group: format!("{} (avg)", s.name),
                        value: s.cpu_share_avg_pct,
                    })
                    .collect()
            };
            (r.scheduler.clone(), bars)
        })
        .collect();
    (panels, per_task)
}

/// The whole page. `timelines[i]` belongs to `reports[i]` (None for the
/// real kernel, whose schedule is not kept).
pub fn page(title: &str, subtitle: &str, reports: &[Report], timelines: &[Option<Schedule>]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body>\
         <h1>{t}</h1><p class=\"note\">{}</p>",
        svg::esc(subtitle),
        t = svg::esc(title)
    );
    out.push_str("<h2>Comparison</h2><p class=\"note\">Click a column to sort. Shares are % of one CPU over each task's life, as <code>top</code> shows them.</p>");
    out.push_str(&comparison_table(reports));
    let common = super::shared_notes(reports);
    for r in reports {
        if let Some(h) = &r.host {
            let _ = write!(
                out,
                "<p class=\"note\">{}: kernel {} on {}, HZ={}, preemption {}; tracing: {}; groups: {}</p>",
                svg::esc(&r.scheduler),
                svg::esc(&h.kernel_release),
                svg::esc(&h.machine),
                h.hz.map_or("unknown".into(), |v| v.to_string()),
                svg::esc(h.preempt.as_deref().unwrap_or("unknown")),
                svg::esc(&h.tracing),
                svg::esc(&h.cgroups)
            );
            for n in h.notes.iter().filter(|n| !common.contains(n)) {
                let _ = write!(out, "<p class=\"note\">{}: {}</p>", svg::esc(&r.scheduler), svg::esc(n));
            }
        }
        for a in &r.absent {
            let _ = write!(out, "<p class=\"note\">{}: not measured: {}</p>", svg::esc(&r.scheduler), svg::esc(a));
        }
    }
    for n in &common {
        let _ = write!(out, "<p class=\"note\">every real row: {}</p>", svg::esc(n));
    }

    out.push_str("<h2>Wakeup latency</h2><p class=\"note\">From the wakeup (or the timer's intended expiry) to running, all tasks; power-of-two buckets, both axes logarithmic and shared by every panel.</p>");
    let lat: Vec<(String, &_)> = reports.iter().map(|r| (r.scheduler.clone(), &r.wakeup_latency)).collect();
    out.push_str(&svg::hist_panels("Wakeup latency", "latency", &lat));

    out.push_str("<h2>CPU share per task</h2>");
    let (panels, per_task) = share_panels(reports);
    if !per_task {
        let _ = write!(
            out,
            "<p class=\"note\">More than {MAX_TASK_BARS} tasks: one bar per [[task]] entry, the average of its tasks.</p>"
        );
    }
    out.push_str(&svg::bar_panels("CPU share", "% of one CPU", &panels, None));

    out.push_str("<h2>Run time per switch</h2><p class=\"note\">How long a task ran each time it got the CPU.</p>");
    let rps: Vec<(String, &_)> = reports.iter().map(|r| (r.scheduler.clone(), &r.runtime_per_switch)).collect();
    out.push_str(&svg::hist_panels("Run time per switch", "run time", &rps));

    out.push_str("<h2>CPU timeline</h2><p class=\"note\">Which task ran where; hover for names. Where several tasks share a pixel, the one that ran longest in it is drawn.</p>");
    for (r, tl) in reports.iter().zip(timelines) {
        match tl {
            Some(tl) if !tl.segments.is_empty() => {
                let title = format!("{}: {} .. {}", r.scheduler, format_duration(tl.from), format_duration(tl.to));
                let name = |t: u32| tl.names.get(&t).cloned().unwrap_or_else(|| format!("task {t}"));
                out.push_str(&svg::timeline(&title, r.cpus, tl.from, tl.to, &tl.segments, &name));
            }
            Some(_) => {
                let _ = write!(out, "<p class=\"note\">{}: nothing ran in the window.</p>", svg::esc(&r.scheduler));
            }
            None => {
                let _ = write!(
                    out,
                    "<p class=\"note\">{}: the real kernel's schedule is not kept; record it with <code>schedlab record</code> to see it in Perfetto.</p>",
                    svg::esc(&r.scheduler)
                );
            }
        }
    }
    // The reports themselves, for whoever wants the numbers behind the plots.
    let json = serde_json::to_string(reports).unwrap_or_default().replace("</", "<\\/");
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"schedlab-reports\">{json}</script><script>{SCRIPT}</script></body></html>"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_has_every_section_and_no_external_resource() {
        let w = schedlab_sim::Workload::from_toml(
            "duration = \"50ms\"\n[machine]\ncpus = 2\n[[task]]\nname = \"hog\"\ncount = 3\nprogram = [ { loop = \"forever\", body = [ { run = \"1s\" } ] } ]\n",
            "t",
            &Default::default(),
        )
        .expect("valid workload");
        let (report, tl) = crate::simulate::simulate_with_timeline(&w, "cfs", (0, 50_000_000)).expect("runs");
        let html = page("hogs", "3 hogs", &[report], &[Some(tl)]);
        for needle in ["Wakeup latency", "CPU share per task", "Run time per switch", "CPU timeline", "<svg", "hog-0"] {
            assert!(html.contains(needle), "missing {needle}");
        }
        assert!(!html.contains("src=\""), "the page must not load anything");
        assert!(!html.contains("href=\"http"), "the page must not link resources");
    }
}
