//! SendMessage and SendMessageBatch: room checked against the limits, the
//! whole batch sent in one critical section, and one commit for it.

use super::Service;
use crate::error::Result;
use crate::queue::{NewMessage, Queue, Sent};

impl Service {
    /// Sends messages in one critical section and wakes long pollers once.
    pub async fn send(&self, name: &str, messages: Vec<NewMessage>) -> Result<Vec<Result<Sent>>> {
        self.send_with(name, messages, |_, _| Ok(()), Queue::send).await
    }

    /// Sends a SendMessageBatch's messages: as [`Service::send`], except
    /// that the rules SQS applies to the whole batch of a FIFO queue
    /// ([`Queue::check_fifo_batch`]) fail the whole call, and that entries
    /// are checked in the batch's words ([`Queue::send_batch_entry`]).
    pub async fn send_batch(&self, name: &str, messages: Vec<NewMessage>) -> Result<Vec<Result<Sent>>> {
        self.send_with(name, messages, Queue::check_fifo_batch, Queue::send_batch_entry)
            .await
    }

    async fn send_with(
        &self,
        name: &str,
        messages: Vec<NewMessage>,
        whole_call: fn(&Queue, &[NewMessage]) -> Result<()>,
        each: fn(&mut Queue, NewMessage, u64) -> Result<Sent>,
    ) -> Result<Vec<Result<Sent>>> {
        let bytes = messages
            .iter()
            .map(|m| (m.body.len() + crate::queue::message::attributes_size(&m.attributes)) as u64)
            .sum();
        self.check_room(messages.len() as u64, bytes)?;
        self.check_queue_account_bytes(name, bytes)?;
        let results: Vec<Result<Sent>> = self
            .with_queue(name, |queue, now| {
                whole_call(queue, &messages)?;
                Ok(messages.into_iter().map(|m| each(queue, m, now)).collect())
            })
            .await??;
        let sent = results.iter().filter(|r| r.is_ok()).count();
        self.metrics.messages_sent.inc_by(sent as u64);
        Ok(results)
    }
}
