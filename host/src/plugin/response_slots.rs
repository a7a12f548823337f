//! HTTP responses the k6 layer holds by number (`loadtest:k6-layer/responses`): a send
//! hands the layer a status and a slot number, and the response's timings, URL, header
//! fields and body stay here until the layer asks for them. QuickJS's runtime converts
//! every value of a call one at a time, so a response returned as a record (status,
//! seven timings, URL, a resource) cost more to receive than the request cost to send.
//!
//! A slot lives until the end of the guest call that made it (an iteration, `setup`,
//! ...), unless the layer keeps it: the layer keeps the slots of the responses the
//! script still holds when its call returns, and releases each when the script drops
//! it. The end of a call is seen here as a new call number (the first send of the
//! next call sweeps the slots the last one left unkept), so a call costs no release
//! of its own.

use crate::net::HttpResponse;

/// One response held for the layer.
#[derive(Debug)]
struct Slot {
    response: HttpResponse,
    /// Kept past the end of its call (`keep`), until `release`.
    kept: bool,
}

/// A VU's held responses, by slot number.
#[derive(Debug, Default)]
pub struct ResponseSlots {
    slots: Vec<Option<Slot>>,
    /// Numbers of empty slots, reused before the table grows.
    free: Vec<u32>,
    /// Slots filled during call `call`, swept when a later call fills one.
    fresh: Vec<u32>,
    call: u64,
    /// Slots in use.
    held: usize,
}

impl ResponseSlots {
    /// Slots in use (kept ones and those of the current call).
    pub fn held(&self) -> usize {
        self.held
    }

    /// Frees the slots an earlier call left unkept, when `call` is a new call;
    /// returns how many it freed.
    pub fn start(&mut self, call: u64) -> usize {
        if call == self.call {
            return 0;
        }
        self.call = call;
        let mut freed = 0;
        for n in std::mem::take(&mut self.fresh) {
            let slot = &mut self.slots[n as usize];
            if slot.as_ref().is_some_and(|s| !s.kept) {
                *slot = None;
                self.free.push(n);
                freed += 1;
            }
        }
        self.held -= freed;
        freed
    }

    /// Holds `response` for the current call; returns its slot number.
    pub fn insert(&mut self, response: HttpResponse) -> u32 {
        let slot = Some(Slot {
            response,
            kept: false,
        });
        let n = match self.free.pop() {
            Some(n) => {
                self.slots[n as usize] = slot;
                n
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.fresh.push(n);
        self.held += 1;
        n
    }

    /// The response in slot `n`, if it is held.
    pub fn get(&self, n: u32) -> Option<&HttpResponse> {
        self.slots
            .get(n as usize)
            .and_then(|s| s.as_ref())
            .map(|s| &s.response)
    }

    /// Keeps slot `n` past the end of its call; false when it is not held.
    pub fn keep(&mut self, n: u32) -> bool {
        match self.slots.get_mut(n as usize).and_then(|s| s.as_mut()) {
            Some(s) => {
                s.kept = true;
                true
            }
            None => false,
        }
    }

    /// Frees slot `n` now; false when it was not held.
    pub fn release(&mut self, n: u32) -> bool {
        match self.slots.get_mut(n as usize) {
            Some(slot @ Some(_)) => {
                *slot = None;
                self.free.push(n);
                self.held -= 1;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ResponseSlots;
    use crate::net::{HttpResponse, Proto, ResponseContent};

    fn response(status: u16) -> HttpResponse {
        HttpResponse {
            status,
            content: ResponseContent::default(),
            body_size: 0,
            timings: Default::default(),
            proto: Proto::Http1,
            url: format!("http://x/{status}"),
        }
    }

    /// A call's slots are freed when the next call starts, except the kept ones,
    /// which stay until released; freed numbers are reused.
    #[test]
    fn slots_end_with_their_call_unless_kept() {
        let mut slots = ResponseSlots::default();
        slots.start(1);
        let a = slots.insert(response(200));
        let b = slots.insert(response(201));
        assert!(slots.keep(b));
        assert_eq!(slots.start(1), 0, "the same call sweeps nothing");
        assert_eq!(slots.start(2), 1);
        assert!(slots.get(a).is_none());
        assert_eq!(slots.get(b).map(|r| r.status), Some(201));
        let c = slots.insert(response(202));
        assert_eq!(c, a, "a freed number is reused");
        assert_eq!(slots.held(), 2);
        slots.start(3);
        assert_eq!(slots.get(b).map(|r| r.url.as_str()), Some("http://x/201"));
        assert!(slots.release(b));
        assert!(!slots.release(b), "a slot is released once");
        assert!(!slots.keep(b));
        assert_eq!(slots.held(), 0);
    }
}
