//! Command-line flags, each also readable from an `SSQ_*` environment variable.

use std::net::SocketAddr;

use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "ssq",
    version,
    about = "An SQS-compatible queue server: in memory, or highly available through Redis."
)]
pub struct Config {
    /// Address to serve HTTP on (SQS API, /health, /ready, /metrics).
    #[arg(long, env = "SSQ_LISTEN", default_value = "127.0.0.1:9324")]
    pub listen: SocketAddr,

    /// Redis URL, e.g. redis://127.0.0.1:6379. Unset: memory-only mode, one
    /// instance, no failover, state lost on exit.
    #[arg(long, env = "SSQ_REDIS_URL")]
    pub redis_url: Option<String>,

    /// This instance's id in logs, metrics and the leader lock [default: hostname-pid].
    #[arg(long, env = "SSQ_NODE_ID")]
    pub node_id: Option<String>,

    /// Base of the queue URLs ssq hands out, e.g. http://sqs.internal:9324
    /// [default: http:// + the request's Host header].
    #[arg(long, env = "SSQ_PUBLIC_URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,

    /// The 12-digit account id in queue URLs and ARNs.
    #[arg(long, env = "SSQ_ACCOUNT_ID", default_value = "000000000000", value_parser = parse_account_id)]
    pub account_id: String,

    /// The region in queue ARNs.
    #[arg(long, env = "SSQ_REGION", default_value = "us-east-1")]
    pub region: String,

    /// Log line format.
    #[arg(long, env = "SSQ_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

impl Config {
    pub fn node_id(&self) -> String {
        self.node_id.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .or_else(|| std::env::var("HOSTNAME").ok())
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "ssq".to_string());
            format!("{host}-{}", std::process::id())
        })
    }
}

fn parse_public_url(value: &str) -> Result<String, String> {
    let url = value.trim_end_matches('/');
    if (url.starts_with("http://") || url.starts_with("https://")) && url.len() > "https://".len() {
        Ok(url.to_string())
    } else {
        Err(format!(
            "{value:?} is not an http:// or https:// URL, e.g. http://sqs.internal:9324"
        ))
    }
}

fn parse_account_id(value: &str) -> Result<String, String> {
    if value.len() == 12 && value.bytes().all(|b| b.is_ascii_digit()) {
        Ok(value.to_string())
    } else {
        Err(format!("{value:?} is not a 12-digit AWS account id"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_memory_only_on_the_emulator_port() {
        let config = Config::try_parse_from(["ssq"]).unwrap();
        assert_eq!(config.listen.to_string(), "127.0.0.1:9324");
        assert!(config.redis_url.is_none());
        assert_eq!(config.account_id, "000000000000");
        assert!(config.node_id().contains('-'));
    }

    #[test]
    fn bad_values_are_refused_with_a_reason() {
        let err = Config::try_parse_from(["ssq", "--account-id", "12"]).unwrap_err();
        assert!(err.to_string().contains("12-digit"));
        let err = Config::try_parse_from(["ssq", "--public-url", "sqs.internal"]).unwrap_err();
        assert!(err.to_string().contains("http://"));
        let ok = Config::try_parse_from(["ssq", "--public-url", "http://sqs:9324/"]).unwrap();
        assert_eq!(ok.public_url.as_deref(), Some("http://sqs:9324"));
    }
}
