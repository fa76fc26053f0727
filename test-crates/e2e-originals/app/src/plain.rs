pub fn where_am_i() -> String {
    format!("plain: {}:{}", file!(), line!())
}
