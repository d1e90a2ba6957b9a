//! Each parser of user input (workload TOML, rt-app JSON, ftrace text)
//! fed mutated and truncated versions of real files: it returns a workload
//! or one error naming the file and line, and never panics.

use proptest::prelude::*;
use schedlab_sim::formats::ftrace;
use schedlab_sim::formats::rtapp::from_rtapp_json;
use schedlab_sim::{Overrides, Workload};

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// A mutation of `text`: cut at a point, a range deleted, or characters
/// from a small alphabet of structural ones inserted.
fn mutate(text: &str, op: u8, at: usize, len: usize, insert: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = at % (chars.len() + 1);
    let end = (at + len).min(chars.len());
    let head: String = chars[..at].iter().collect();
    match op % 3 {
        0 => head,
        1 => head + &chars[end..].iter().collect::<String>(),
        _ => head + insert + &chars[at..].iter().collect::<String>(),
    }
}

fn structural() -> impl Strategy<Value = String> {
    proptest::string::string_regex(r#"[\[\]{}",:=#\n 0-9a-z.\-]{0,8}"#).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn workload_toml(op in any::<u8>(), at in any::<usize>(), len in 0usize..40, ins in structural()) {
        for seed in ["scenarios/mixed-64.toml", "scenarios/container-quota.toml", "examples/rt-app/pipeline.toml"] {
            let text = mutate(&read(seed), op, at, len, &ins);
            if let Err(e) = Workload::from_toml(&text, "fuzz.toml", &Overrides::default()) {
                prop_assert!(e.to_string().starts_with("fuzz.toml:"), "{}", e);
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    #[test]
    fn rt_app_json(op in any::<u8>(), at in any::<usize>(), len in 0usize..40, ins in structural()) {
        for seed in ["examples/rt-app/pipeline.json", "examples/rt-app/sync.json"] {
            let text = mutate(&read(seed), op, at, len, &ins);
            let ov = Overrides { cpus: Some(4), ..Overrides::default() };
            if let Err(e) = from_rtapp_json(&text, "fuzz.json", &ov) {
                prop_assert!(e.to_string().starts_with("fuzz.json:"), "{}", e);
                prop_assert!(e.line >= 1 && e.line <= text.lines().count() + 1, "line {} of {}", e.line, e);
            }
        }
    }

    #[test]
    fn ftrace_text(op in any::<u8>(), at in any::<usize>(), len in 0usize..40, ins in structural()) {
        let trace = read("crates/schedlab-policies/tests/fixtures/real-6.18-sched.trace");
        let text = mutate(&trace, op, at, len, &ins);
        if let Err(e) = ftrace::parse(&text) {
            prop_assert!(e.starts_with("line "), "{}", e);
        }
    }

    #[test]
    fn any_text_at_all(text in "\\PC{0,200}") {
        let _ = Workload::from_toml(&text, "fuzz.toml", &Overrides::default());
        let _ = from_rtapp_json(&text, "fuzz.json", &Overrides::default());
        let _ = ftrace::parse(&text);
    }
}
