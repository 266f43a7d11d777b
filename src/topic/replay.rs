//! The registry's side of archives and replays (`archive.rs` has the
//! rules): a topic's archive turned on, filled, expired and dropped, each
//! change recorded for the store; a subscription's replay started, and
//! stepped through the archive a batch at a time by the service.

use super::archive::{Archive, Archived};
use super::error::Result;
use super::records::{archive_key, archive_record};
use super::subscription::{Replay, ReplayStatus};
use super::{Publication, SnsChange, Subscription, TopicArn, Topics};
use crate::queue::key::Home;

/// What one step of a replay does.
#[derive(Debug)]
pub enum ReplayStep {
    /// Deliver these publications to the subscription (as it is now), in
    /// order; the replay's cursor has moved past them.
    Deliver {
        subscription: Box<Subscription>,
        publications: Vec<Archived>,
        base_url: String,
        home: Home,
    },
    /// Nothing is left to replay (or the subscription is gone): it takes
    /// new publications directly again, or, past an ending point, none.
    Done,
}

impl Topics {
    /// Sets the time of the changes that follow (the service's clock).
    pub fn set_time(&mut self, now: u64) {
        self.now = now;
    }

    /// What every archive holds, publications and bytes: counted in the
    /// instance's limits.
    pub fn archived(&self) -> (u64, u64) {
        self.archived
    }

    /// Applies a topic's ArchivePolicy (`{}` turns archiving off and drops
    /// what was kept).
    pub(super) fn set_archive(&mut self, arn: &TopicArn, policy: &str) -> Result<()> {
        let retention = super::archive::retention(policy)?;
        let now = self.now;
        let topic = self.topic_mut(arn)?;
        match (retention, &mut topic.archive) {
            (None, _) => {
                topic.attributes.remove("ArchivePolicy");
                self.drop_archive(arn);
            }
            (Some(retention), Some(archive)) => archive.retention_ms = retention,
            (Some(retention), None) => topic.archive = Some(Archive::new(retention, now)),
        }
        Ok(())
    }

    /// Drops a topic's archive and its records.
    pub(super) fn drop_archive(&mut self, arn: &TopicArn) {
        let Some(archive) = self
            .topics
            .get_mut(&arn.to_string())
            .and_then(|topic| topic.archive.take())
        else {
            return;
        };
        self.account_archive(archive.holding(), (0, 0));
        let topic = arn.to_string();
        for sequence in archive.sequences() {
            self.record(SnsChange::Delete {
                key: archive_key(&topic, sequence),
            });
        }
    }

    /// Keeps a FIFO topic's publication in its archive, if it has one,
    /// after dropping what is past retention.
    pub(super) fn archive_publication(
        &mut self,
        arn: &TopicArn,
        publication: &Publication,
        sequence: u64,
        message_id: &str,
        now: u64,
    ) {
        if !self.topic(arn).is_ok_and(|topic| topic.archives()) {
            return;
        }
        self.expire_archive(arn, now);
        let archived = Archived::of(publication, sequence, message_id, now);
        let record = archive_record(&archived);
        if self.with_archive(arn, |archive| archive.push(archived)).is_some() {
            self.record(SnsChange::Put {
                key: archive_key(&arn.to_string(), sequence),
                record,
            });
        }
    }

    fn expire_archive(&mut self, arn: &TopicArn, now: u64) {
        let dropped = self
            .with_archive(arn, |archive| archive.expire(now))
            .unwrap_or_default();
        let topic = arn.to_string();
        for sequence in dropped {
            self.record(SnsChange::Delete {
                key: archive_key(&topic, sequence),
            });
        }
    }

    /// Runs `change` on a topic's archive, if it has one, keeping the
    /// totals of what the archives hold.
    pub(super) fn with_archive<R>(
        &mut self,
        arn: &TopicArn,
        change: impl FnOnce(&mut Archive) -> R,
    ) -> Option<R> {
        let archive = self.topics.get_mut(&arn.to_string())?.archive.as_mut()?;
        let before = archive.holding();
        let result = change(archive);
        let after = archive.holding();
        self.account_archive(before, after);
        Some(result)
    }

    pub(super) fn account_archive(&mut self, before: (u64, u64), after: (u64, u64)) {
        self.archived.0 = self.archived.0 + after.0 - before.0;
        self.archived.1 = self.archived.1 + after.1 - before.1;
    }

    /// Checks a ReplayPolicy for a subscription to `topic` (before it is
    /// set, so that a refused one changes nothing): the replay's window.
    pub fn check_replay(&self, topic: &TopicArn, policy: &str) -> Result<(u64, Option<u64>)> {
        let topic = self.topic(topic)?;
        if !topic.is_fifo() {
            return Err(super::SnsError::parameter(
                "ReplayPolicy: replay policies are only for subscriptions to FIFO topics",
            ));
        }
        let beginning = topic.archive.as_ref().map(|archive| archive.beginning(self.now));
        super::archive::replay_policy(policy, beginning, self.now)
    }

    /// Starts the replay the subscription's ReplayPolicy asks for (after
    /// the attribute was set); `base_url` is the address the client called,
    /// `home` the instance's account and region.
    pub fn start_replay(&mut self, arn: &str, base_url: &str, home: &Home) -> Result<()> {
        let sub = self.subscription(arn)?;
        let Some(policy) = sub.attributes.get("ReplayPolicy") else {
            return Ok(());
        };
        let (from, to) = self.check_replay(&sub.topic.clone(), &policy.clone())?;
        let replay = Replay {
            from,
            to,
            after: 0,
            status: ReplayStatus::Pending,
            base_url: base_url.to_string(),
            home_region: home.region.clone(),
            home_account: Some(home.account.clone()),
        };
        if let Some(sub) = self.subscriptions.get_mut(arn) {
            std::sync::Arc::make_mut(sub).replay = Some(replay);
        }
        self.record_subscription(arn);
        Ok(())
    }

    /// The subscriptions whose replay has yet to complete.
    pub fn unfinished_replays(&self) -> Vec<String> {
        self.subscriptions
            .values()
            .filter(|sub| {
                sub.replay
                    .as_ref()
                    .is_some_and(|replay| replay.status != ReplayStatus::Completed)
            })
            .map(|sub| sub.arn.clone())
            .collect()
    }

    /// One step of a subscription's replay: the next archived publications
    /// in its window that its filter lets through (at most `max` looked
    /// at), or `Done` once it has caught up with the archive, when it is
    /// marked completed. Publications past retention are dropped first.
    pub fn replay_step(&mut self, arn: &str, max: usize) -> Result<ReplayStep> {
        let now = self.now;
        let Ok(sub) = self.subscription(arn) else {
            return Ok(ReplayStep::Done);
        };
        let Some(replay) = sub.replay.clone() else {
            return Ok(ReplayStep::Done);
        };
        if replay.status == ReplayStatus::Completed {
            return Ok(ReplayStep::Done);
        }
        let topic_arn = sub.topic.clone();
        self.expire_archive(&topic_arn, now);
        let sub = self.subscription(arn)?.clone();
        let topic = self.topic(&topic_arn)?;
        let mut looked_at = Vec::new();
        if let Some(archive) = &topic.archive {
            looked_at.extend(archive.after(replay.after, max).cloned());
        }
        let past_end = |archived: &Archived| replay.to.is_some_and(|to| archived.at > to);
        let finished = looked_at.is_empty() || looked_at.iter().any(past_end);
        let mut publications = Vec::new();
        let mut after = replay.after;
        for archived in looked_at {
            if past_end(&archived) {
                break;
            }
            after = archived.sequence;
            if archived.at < replay.from {
                continue;
            }
            let passes = archived
                .publication()
                .is_ok_and(|publication| publication.passes(&sub));
            if passes {
                publications.push(archived);
            }
        }
        let status = match finished {
            true => ReplayStatus::Completed,
            false => ReplayStatus::InProgress,
        };
        let base_url = replay.base_url.clone();
        let home = Home {
            account: (replay.home_account.clone()).unwrap_or_else(|| sub.topic.account.clone()),
            region: replay.home_region.clone(),
        };
        if let Some(held) = self.subscriptions.get_mut(arn) {
            std::sync::Arc::make_mut(held).replay = Some(Replay {
                after,
                status,
                ..replay
            });
        }
        self.record_subscription(arn);
        if publications.is_empty() && finished {
            return Ok(ReplayStep::Done);
        }
        Ok(ReplayStep::Deliver {
            subscription: Box::new(sub),
            publications,
            base_url,
            home,
        })
    }
}
