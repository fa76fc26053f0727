pub struct Client;

impl Client {
    pub fn new() -> Self {
        Client
    }

    pub fn send(&self) {
        crate::helper();
    }
}

pub fn connect() -> Client {
    Client::new()
}
