//! Everything that reads sources at build or run time must see the user's bytes, probes or not.

mod helpers;
mod layout;
#[path = "renamed_file.rs"]
mod renamed;
pub(crate) mod plain;

const OWN_SOURCE: &str = include_str!("main.rs");
const HELPERS_SOURCE: &str = include_str!("helpers.rs");
const B_BYTES: &[u8] = include_bytes!("../../b/src/lib.rs");

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn report_panic() {
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column())).unwrap_or_default();
        println!("panicked at {at}: {}", info.payload().downcast_ref::<&str>().unwrap_or(&"?"));
    }));
    let _ = std::panic::catch_unwind(|| helpers::fail());
}

fn run() {
    println!("b hashed by the build script: {}", env!("B_SOURCE_HASH"));
    println!("main.rs hashed by the build script: {}", env!("MAIN_SOURCE_HASH"));
    println!("include_str!(main.rs): {:016x} ({} lines)", fnv(OWN_SOURCE.as_bytes()), OWN_SOURCE.lines().count());
    println!("include_str!(helpers.rs): {:016x}", fnv(HELPERS_SOURCE.as_bytes()));
    println!("include_bytes!(b): {:016x}", fnv(B_BYTES));
    let at_run_time = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/src/helpers.rs")).unwrap_or_default();
    println!("helpers.rs read at run time: {:016x}", fnv(&at_run_time));
    println!("here: {}:{}:{}", file!(), line!(), column!());
    println!("{}", helpers::where_am_i());
    println!("{}", helpers::deep::where_am_i());
    println!("consts (no functions, no probes): {}", helpers::consts::NAME);
    println!("platform (declared once per cfg): {}", helpers::platform::NAME);
    println!("{}", helpers::nested::leaf::where_am_i());
    println!("{}", layout::where_am_i());
    println!("{}", renamed::where_am_i());
    println!("{}", plain::where_am_i());
    println!("{} {}", b::double(21), b::shout("done"));
    report_panic();
}

fn main() {
    run();
}
