//! The command-line flags of `--explore` and of `dhp-conform replay`, kept
//! apart from the assertion runner's.

use std::path::PathBuf;
use std::time::Duration;

/// `--explore` and its settings (flattened into the main command line).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ExploreArgs {
    /// Instead of the fixed assertions: random operation sequences judged
    /// by the model (dhp-model), a divergence shrunk to a replay file.
    #[arg(long, help_heading = "Explore")]
    pub explore: bool,
    /// The seed (default 1): the same seed runs the same sequences.
    #[arg(long, value_name = "S", requires = "explore", help_heading = "Explore")]
    pub seed: Option<u64>,
    /// Sequences at most (default 200).
    #[arg(long, value_name = "K", requires = "explore", help_heading = "Explore")]
    pub sequences: Option<u64>,
    /// Steps per sequence (default 30).
    #[arg(long, value_name = "N", requires = "explore", help_heading = "Explore")]
    pub steps: Option<usize>,
    /// Seconds of exploring (default 30): no new sequence starts after.
    #[arg(long, value_name = "SECS", requires = "explore", help_heading = "Explore")]
    pub time: Option<f64>,
    /// Where replay files are written (default: the system temp dir).
    #[arg(long, value_name = "DIR", requires = "explore", help_heading = "Explore")]
    pub replay_dir: Option<PathBuf>,
}

impl ExploreArgs {
    /// The settings, or why they are unusable.
    pub fn config(&self, pinned: Vec<(String, String)>) -> Result<super::Config, String> {
        let time = self.time.unwrap_or(30.0);
        let time = Duration::try_from_secs_f64(time)
            .ok()
            .filter(|t| *t > Duration::ZERO && time <= 86_400.0)
            .ok_or_else(|| format!("--time must be in (0, 86400] seconds, got {time}"))?;
        let steps = self.steps.unwrap_or(30);
        if !(1..=10_000).contains(&steps) {
            return Err(format!("--steps must be in 1..=10000, got {steps}"));
        }
        let sequences = self.sequences.unwrap_or(200);
        if sequences == 0 {
            return Err("--sequences must be at least 1".into());
        }
        Ok(super::Config {
            seed: self.seed.unwrap_or(1),
            sequences,
            steps,
            time,
            replay_dir: self.replay_dir.clone().unwrap_or_else(|| std::env::temp_dir().join("dhp-explore")),
            pinned,
        })
    }
}

/// `dhp-conform replay FILE --impl CMD`.
#[derive(clap::Parser, Debug)]
#[command(name = "dhp-conform replay", about = "Run an --explore replay file again against an implementation")]
pub struct ReplayCli {
    /// The replay file --explore wrote.
    pub file: PathBuf,
    /// The implementation (`ours`, `reference`, or an adapter command).
    #[arg(long = "impl", value_name = "CMD", default_value = "ours")]
    pub imp: String,
    /// Runs (a race may show only in some).
    #[arg(long, default_value_t = 5)]
    pub runs: u32,
    /// Seconds an adapter may take to answer one request.
    #[arg(long, default_value_t = 20.0, value_name = "SECS")]
    pub timeout: f64,
}

/// The divergence keys an expectations file pins for `label`: each
/// `explore-*` pin's `"divergences"` list (prefixes of divergence keys).
pub fn pinned(expect: &serde_json::Value, label: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(pins) = expect.pointer(&format!("/implementations/{label}")).and_then(|v| v.as_object()) else {
        return out;
    };
    for (id, pin) in pins.iter().filter(|(id, _)| id.starts_with("explore-")) {
        let why = pin["why"].as_str().unwrap_or(id).to_string();
        // each a key prefix, or {"key": prefix, "why": reason}
        for k in pin["divergences"].as_array().into_iter().flatten() {
            match (k.as_str(), k["key"].as_str()) {
                (Some(key), _) => out.push((key.to_string(), why.clone())),
                (None, Some(key)) => out.push((key.to_string(), k["why"].as_str().unwrap_or(&why).to_string())),
                (None, None) => {}
            }
        }
    }
    out
}
