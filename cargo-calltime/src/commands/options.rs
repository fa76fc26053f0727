//! From the clap flags to the stages' typed options: each flag is validated here, once, with one message.

use std::path::Path;

use anyhow::Result;

use crate::cargo::{BuildOptions, NamedTarget, TargetKind};
use crate::cli::{CargoArgs, ColorChoice, GlobalArgs, PlanArgs, RecordArgs, TargetArgs, ViewArgs};
use crate::error::UserError;
use crate::plan::{path_regex, PlanOptions};
use crate::run::RecordOptions;
use crate::views::{ViewFormat, ViewOptions, Weight};
use crate::workspace::CargoOptions;

pub fn cargo_options(global: &GlobalArgs, cargo: &CargoArgs) -> CargoOptions {
    CargoOptions {
        manifest_path: global.manifest_path.clone(),
        packages: cargo.package.clone(),
        features: cargo
            .features
            .iter()
            .flat_map(|f| f.split([',', ' ']))
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect(),
        all_features: cargo.all_features,
        no_default_features: cargo.no_default_features,
        target_dir: cargo.target_dir.clone(),
        offline: global.offline || global.frozen,
        locked: global.locked || global.frozen,
    }
}

pub fn build_options(global: &GlobalArgs, target: &TargetArgs) -> BuildOptions {
    BuildOptions {
        release: target.release,
        profile: target.profile.clone(),
        color: match global.color {
            Some(ColorChoice::Always) => Some(true),
            Some(ColorChoice::Never) => Some(false),
            Some(ColorChoice::Auto) | None => None,
        },
        echo: global.verbose > 0,
        progress: !global.quiet && (global.verbose > 0 || std::io::IsTerminal::is_terminal(&std::io::stderr())),
        cargo_verbose: global.verbose > 1,
    }
}

/// `--bin/--example/--test/--bench NAME` or `--lib`: at most one.
pub fn named_target(args: &TargetArgs) -> Result<Option<NamedTarget>> {
    let given: Vec<NamedTarget> = [
        (TargetKind::Bin, &args.bin),
        (TargetKind::Example, &args.example),
        (TargetKind::Test, &args.test),
        (TargetKind::Bench, &args.bench),
    ]
    .into_iter()
    .filter_map(|(kind, name)| name.clone().map(|name| NamedTarget { kind, name }))
    .chain(args.lib.then(|| NamedTarget { kind: TargetKind::Lib, name: String::new() }))
    .collect();
    if given.len() > 1 {
        return Err(UserError::new("only one of --bin, --example, --test, --bench and --lib can be given")
            .hint("run one target at a time")
            .into());
    }
    Ok(given.into_iter().next())
}

/// The plan flags, validated (roots, depth, regexes); `--exclude-fast` is read later, from the workspace
/// ([`super::plan`]).
pub fn plan_options(args: &PlanArgs) -> Result<PlanOptions> {
    let mut options = PlanOptions::new(args.root.clone(), args.depth)?;
    options.filter = args.filter.as_deref().map(|re| path_regex("--filter", re)).transpose()?;
    options.exclusions.pattern = args.exclude.as_deref().map(|re| path_regex("--exclude", re)).transpose()?;
    options.probe_trivial = args.probe_trivial;
    options.all_functions = args.all_functions;
    Ok(options)
}

/// A duration flag (`250us`, `1.5ms`), in nanoseconds.
fn duration(flag: &str, value: Option<&str>) -> Result<Option<u64>> {
    value
        .map(|text| {
            crate::units::parse_duration(text).map_err(|err| {
                let mut user = UserError::new(format!("invalid {flag}: {}", err.message));
                user.hints = err.hints;
                anyhow::Error::new(user)
            })
        })
        .transpose()
}

/// The recording flags, passed to the runtime as CALLTIME_* variables; `slower_than` is the view's `--slower-than`,
/// which a run also hands to the program (so it writes only those trees).
pub fn record_options(args: &RecordArgs, slower_than: Option<&str>) -> Result<RecordOptions> {
    // (flag, value, what N means, what 1 does)
    let at_least_one = |flag: &str, value: Option<u64>, meaning: &str, one: &str| -> Result<Option<u64>> {
        if value == Some(0) {
            return Err(UserError::new(format!("{flag} must be at least 1 ({meaning})"))
                .hint(format!("use {flag} 1 to {one}"))
                .into());
        }
        Ok(value)
    };
    Ok(RecordOptions {
        node_cap: args.node_cap,
        fold_after: args.fold_after,
        time_sample: at_least_one("--time-sample", args.time_sample, "time 1 in N calls", "time every call")?,
        min_node_ns: duration("--min-node-time", args.min_node_time.as_deref())?,
        sample: at_least_one("--sample", args.sample, "record 1 in N invocations", "record every invocation")?,
        max_invocations: args.max_invocations,
        exact: args.exact,
        max_depth: at_least_one("--max-depth", args.max_depth, "frames stored in depth", "store the root only")?,
        slower_than_ns: duration("--slower-than", slower_than)?,
        keep_slowest: at_least_one(
            "--keep-slowest",
            args.keep_slowest,
            "the K slowest invocations",
            "keep the slowest",
        )?,
        keep_sample: at_least_one("--keep-sample", args.keep_sample, "a sample of N invocations", "keep one")?,
        start_off: args.start_off,
        rotate_bytes: size("--rotate-size", args.rotate_size.as_deref())?,
        max_bytes_per_hour: size("--max-size-per-hour", args.max_size_per_hour.as_deref())?,
    })
}

/// A size flag (`16MB`, `512KiB`, `0`), in bytes: decimal units (kB, MB, GB, as cargo prints sizes) or binary ones
/// (KiB, MiB, GiB); a bare number is bytes.
fn size(flag: &str, value: Option<&str>) -> Result<Option<u64>> {
    let Some(text) = value else { return Ok(None) };
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let factor: Option<f64> = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => Some(1.0),
        "k" | "kb" => Some(1e3),
        "m" | "mb" => Some(1e6),
        "g" | "gb" => Some(1e9),
        "kib" => Some(1024.0),
        "mib" => Some(1024.0 * 1024.0),
        "gib" => Some(1024.0 * 1024.0 * 1024.0),
        _ => None,
    };
    match (number.parse::<f64>(), factor) {
        (Ok(n), Some(factor)) if n.is_finite() && n * factor < u64::MAX as f64 => Ok(Some((n * factor).round() as u64)),
        _ => Err(UserError::new(format!("invalid {flag}: `{text}` is not a size"))
            .hint(format!("give bytes with a unit, e.g. `{flag} 16MB` or `{flag} 512KiB` (`0` switches it off)"))
            .into()),
    }
}

/// The view flags; `color` says whether the text goes to a terminal that takes colour.
pub fn view_options(args: &ViewArgs, color: bool) -> Result<ViewOptions> {
    let format = args.format;
    if args.flamechart && format != ViewFormat::Svg {
        return Err(UserError::new("--flamechart draws an SVG flame chart")
            .hint("add `--format svg` (and `--invocation K` to pick the invocation)")
            .into());
    }
    if args.weight != Weight::Time && (!matches!(format, ViewFormat::Svg | ViewFormat::Folded) || args.flamechart) {
        return Err(UserError::new("--weight sizes the frames of a flamegraph or folded stacks")
            .hint("add `--format svg` or `--format folded` (a flame chart is always by time)")
            .into());
    }
    if args.sort.is_some() && !matches!(format, ViewFormat::Table | ViewFormat::Json) {
        return Err(UserError::new("--sort orders the function table")
            .hint("add `--format table` (or `--format json`, whose `functions` it orders)")
            .into());
    }
    if args.invocation == Some(0) {
        return Err(UserError::new("--invocation counts from 1")
            .hint("`--invocation 1` is the first invocation that completed")
            .into());
    }
    Ok(ViewOptions {
        format,
        top: args.top,
        highlight_ns: duration("--highlight", args.highlight.as_deref())?,
        min_time_ns: duration("--min-time", args.min_time.as_deref())?,
        invocation: args.invocation,
        flamechart: args.flamechart,
        color: color && format == ViewFormat::Text,
        raw_times: args.raw_times,
        sort: args.sort.unwrap_or_default(),
        weight: args.weight,
        slower_than_ns: duration("--slower-than", args.slower_than.as_deref())?,
        history: Vec::new(),
    })
}

/// Whether `-o` sends the output to stdout (no `-o`, or `-o -`).
pub fn to_stdout(output: Option<&Path>) -> bool {
    output.is_none_or(|path| path == Path::new("-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_decimal_and_binary_units() {
        let read = |text: &str| size("--rotate-size", Some(text)).map_err(|e| e.to_string());
        assert_eq!(read("16MB"), Ok(Some(16_000_000)));
        assert_eq!(read("1.5 kB"), Ok(Some(1_500)));
        assert_eq!(read("512KiB"), Ok(Some(524_288)));
        assert_eq!(read("2GiB"), Ok(Some(2_147_483_648)));
        assert_eq!(read("4096"), Ok(Some(4096)));
        assert_eq!(read("0"), Ok(Some(0)));
        assert_eq!(size("--rotate-size", None).map_err(|e| e.to_string()), Ok(None));
        for bad in ["", "MB", "12 parsecs", "-3MB", "1e30GB"] {
            assert!(read(bad).is_err(), "`{bad}` is not a size");
        }
    }
}
