pub fn close_by() {}
