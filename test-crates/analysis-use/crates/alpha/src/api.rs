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

/// Implemented downstream (in `app`): a call through `dyn Handler` reaches those impls too.
pub trait Handler {
    fn handle(&self) -> u32;

    fn name(&self) -> &'static str {
        "handler"
    }
}

pub fn dispatch(handler: &dyn Handler) -> u32 {
    handler.name().len() as u32 + handler.handle()
}
