#[test]
fn where_am_i_names_this_file() {
    assert!(super::where_am_i().contains("helpers.rs"));
}
