pub fn where_am_i() -> String {
    format!("renamed: {}:{}", file!(), line!())
}
