mod inner;

pub fn where_am_i() -> String {
    format!("layout: {}:{} and {}", file!(), line!(), inner::where_am_i())
}
