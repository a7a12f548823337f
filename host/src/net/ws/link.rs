//! What the plugin's handle and the socket's task share, in one allocation: the
//! messages received and not yet taken (bounded in count and bytes: the task reads the
//! peer only while they are under both limits, so a plugin that falls behind costs at
//! most the budget plus one message per socket), the plugin's commands on their way to
//! the task, whether either side has gone, and the session's metrics.
//!
//! One mutex, a [`Notify`] for the task and the plugin's waker instead of two tokio
//! channels: a channel allocates a block of 32 slots when it is made and pads its
//! halves to cache lines, for every idle socket. The queues here allocate only while
//! something is in them (the inbox lets its buffer go when emptied, the command
//! queue's goes with the commands).
//!
//! The plugin has one waiter at most (its receives take the socket mutably), so it
//! waits with a waker kept under the mutex it looks at the inbox with: a look that
//! finds nothing leaves the waker in the same lock, and a delivery takes it in the
//! lock it pushes in. A `Notify` for it cost a second lock, a waiter list and a future
//! per wait, for every message (issue #53: capacity.js's cold wake-ups).

use super::message::{WsError, WsMessage};
use super::session::Session;
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use tokio::sync::{oneshot, Notify};

/// What the plugin asks the socket's task to do.
pub(super) enum Command {
    /// Write a message; the reply says whether it was written.
    Send(tokio_tungstenite::tungstenite::Message, Reply),
    /// Close with this code and reason, wait (briefly) for the peer's close.
    Close(u16, String, Reply),
}

/// Where the task answers a command.
pub(super) type Reply = oneshot::Sender<Result<(), WsError>>;

/// Shared by the plugin's [`Socket`](super::socket::Socket) and the socket's task.
pub(super) struct Link {
    state: Mutex<State>,
    /// Most messages held for the plugin (`[websocket] recv_buffer`).
    max_messages: usize,
    /// Most bytes held for the plugin (`[websocket] recv_buffer_bytes`).
    max_bytes: usize,
    /// Wakes the task: a command came, the plugin let go, or it took a message from a
    /// full inbox. A stored permit if the task is not waiting yet, so none is lost.
    to_task: Notify,
    /// The socket's life for the metrics.
    pub(super) session: Session,
}

#[derive(Default)]
struct State {
    inbox: VecDeque<WsMessage>,
    /// Payload bytes in `inbox`.
    held: usize,
    commands: VecDeque<Command>,
    /// The plugin let go of the socket.
    dropped: bool,
    /// The task ended: no message will come and no command will be carried out.
    ended: bool,
    /// The plugin waiting for a message or the end, woken (and let go) by the next.
    plugin: Option<Waker>,
}

/// What the task is asked to do next, from the plugin's side.
pub(super) enum Asked {
    /// Carry out these commands, in order.
    Commands(VecDeque<Command>),
    /// The plugin let go of the socket.
    Dropped,
    /// Nothing new.
    Nothing,
}

/// What the plugin finds in the inbox.
pub(super) enum Taken {
    /// The next message.
    Message(WsMessage),
    /// Nothing yet.
    Empty,
    /// Nothing, and nothing will come: the socket ended.
    Ended,
    /// The next message was not the kind asked for; it stays in the inbox.
    Skipped,
}

/// What [`Link::take_text`] finds.
pub(super) enum TakenText {
    /// The next message, text.
    Text(String),
    /// Nothing yet.
    Empty,
    /// A binary message next, or the socket ended: left for [`Link::take`].
    Other,
}

impl Link {
    /// An empty link that holds at most `max_messages` messages and (about)
    /// `max_bytes` bytes for the plugin.
    pub(super) fn new(session: Session, max_messages: usize, max_bytes: usize) -> Self {
        Self {
            state: Mutex::new(State::default()),
            max_messages: max_messages.max(1),
            max_bytes,
            to_task: Notify::new(),
            session,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent at every step, so a panic elsewhere leaves it usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn has_room(&self, state: &State) -> bool {
        state.inbox.len() < self.max_messages && state.held < self.max_bytes
    }

    // The task's side.

    /// The commands queued and whether the plugin let go; the task calls it before it
    /// waits, and [`Link::task_woken`] wakes it when there is more.
    pub(super) fn asked(&self) -> Asked {
        let mut state = self.lock();
        if state.dropped {
            Asked::Dropped
        } else if state.commands.is_empty() {
            Asked::Nothing
        } else {
            // Taken whole: the buffer goes with it, not kept for the next command.
            Asked::Commands(std::mem::take(&mut state.commands))
        }
    }

    /// Whether the task may read another message from the peer.
    pub(super) fn may_read(&self) -> bool {
        self.has_room(&self.lock())
    }

    /// Puts a message in the inbox (the task read it while [`Link::may_read`]).
    pub(super) fn deliver(&self, message: WsMessage) {
        let waiting = {
            let mut state = self.lock();
            state.held += message.len();
            state.inbox.push_back(message);
            state.plugin.take()
        };
        // Woken outside the lock, which the woken plugin's look takes.
        if let Some(plugin) = waiting {
            plugin.wake();
        }
    }

    /// Waits until the plugin asks something or makes room.
    pub(super) async fn task_woken(&self) {
        self.to_task.notified().await;
    }

    /// The task ended: the plugin is told once the inbox is empty, and commands still
    /// queued are dropped (their callers are told why the socket ended).
    pub(super) fn end(&self) {
        let (unanswered, waiting) = {
            let mut state = self.lock();
            state.ended = true;
            (std::mem::take(&mut state.commands), state.plugin.take())
        };
        drop(unanswered);
        if let Some(plugin) = waiting {
            plugin.wake();
        }
    }

    // The plugin's side.

    /// Queues a command for the task; gives it back if the task has ended.
    pub(super) fn ask(&self, command: Command) -> Result<(), Command> {
        {
            let mut state = self.lock();
            if state.ended {
                return Err(command);
            }
            state.commands.push_back(command);
        }
        self.to_task.notify_one();
        Ok(())
    }

    /// Takes the next message, if one is there; wakes the task if that made room.
    /// With `waker`, a look that finds nothing ([`Taken::Empty`]) keeps it, to be woken
    /// when a message arrives or the socket ends.
    pub(super) fn take(&self, waker: Option<&Waker>) -> Taken {
        self.take_if(|_| true, waker)
    }

    /// Takes the next message if it is text; a binary message, or the end, is left
    /// for [`Link::take`]. `waker` as for [`Link::take`].
    pub(super) fn take_text(&self, waker: Option<&Waker>) -> TakenText {
        match self.take_if(|m| matches!(m, WsMessage::Text(_)), waker) {
            Taken::Message(WsMessage::Text(text)) => TakenText::Text(text),
            Taken::Empty => TakenText::Empty,
            Taken::Message(WsMessage::Binary(_)) | Taken::Ended | Taken::Skipped => {
                TakenText::Other
            }
        }
    }

    /// Takes the next message when `wanted(message)`; leaves it in the inbox
    /// ([`Taken::Skipped`]) when not; keeps `waker` when there is nothing yet.
    fn take_if(&self, wanted: impl FnOnce(&WsMessage) -> bool, waker: Option<&Waker>) -> Taken {
        let mut state = self.lock();
        // Whether the task stopped reading, judged before this message leaves.
        let was_full = !self.has_room(&state);
        let message = match state.inbox.front() {
            None if state.ended => return Taken::Ended,
            None => {
                // In the lock a delivery takes it in: no message can slip between this
                // look and the wait. The same task's waker is not cloned again.
                if let Some(waker) = waker {
                    match &mut state.plugin {
                        Some(kept) if kept.will_wake(waker) => {}
                        kept => *kept = Some(waker.clone()),
                    }
                }
                return Taken::Empty;
            }
            Some(next) if !wanted(next) => return Taken::Skipped,
            Some(_) => state.inbox.pop_front().expect("the front was just seen"),
        };
        state.held -= message.len();
        if state.inbox.is_empty() {
            // A burst's buffer is not kept by a socket that is idle again.
            state.inbox = VecDeque::new();
        }
        drop(state);
        // Only a task that stopped reading waits for room: no wake-up per message.
        if was_full {
            self.to_task.notify_one();
        }
        // Counted as received when the plugin takes it, as k6 counts a message when its
        // event loop hands it to the script: a message still in the inbox when the
        // socket closes (the script's close timer ran first) was never received by the
        // script, and `ws_msgs_received` must equal what scripts count.
        self.session.received();
        Taken::Message(message)
    }

    /// The plugin stopped waiting (its wait timed out): a message that arrives now
    /// does not wake it.
    pub(super) fn forget_plugin(&self) {
        self.lock().plugin = None;
    }

    /// The plugin let go of the socket: the task says goodbye to the peer and ends.
    pub(super) fn drop_socket(&self) {
        self.lock().dropped = true;
        self.to_task.notify_one();
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.lock().held
    }
}
