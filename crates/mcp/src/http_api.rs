//! The REST API over HTTP, for `driftwatch mcp` on stdio: a local agent's tools call a
//! driftwatch server (`DRIFTWATCH_URL`) with the agent's token, as any API client would.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::{Api, ApiRequest, BoxFuture};

/// A driftwatch server's API at `base` (`https://driftwatch.example`, without `/api/v1`).
pub struct HttpApi {
    client: reqwest::Client,
    base: String,
}

impl HttpApi {
    /// The API of the server at `base`.
    pub fn new(base: &str) -> Result<HttpApi, String> {
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(120))
            .user_agent(concat!("driftwatch-mcp/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(HttpApi { client, base: base.trim_end_matches('/').to_owned() })
    }

    /// Whether `token` has the `write` scope, from the account's token list (each token shows
    /// its prefix); `None` when that cannot be told (the API still refuses what it must).
    pub async fn may_write(&self, token: &str) -> Option<bool> {
        let answer = self
            .client
            .get(format!("{}/api/v1/tokens?limit=500", self.base))
            .bearer_auth(token)
            .send()
            .await
            .ok()?
            .error_for_status()
            .ok()?;
        let list: Value = serde_json::from_slice(&answer.bytes().await.ok()?).ok()?;
        let mine = list["items"]
            .as_array()?
            .iter()
            .find(|t| t["prefix"].as_str().is_some_and(|prefix| !prefix.is_empty() && token.starts_with(prefix)))?;
        Some(mine["scopes"].as_array()?.iter().any(|s| s == "write"))
    }
}

/// How often `driftwatch mcp` asks the server what changed while its agent listens.
const POLL: std::time::Duration = std::time::Duration::from_secs(1);

impl HttpApi {
    /// Feeds `hub` the changes the server records (`GET /changes`, from now on), asked every
    /// second while the agent listens: push on stdio, a poll away from the server. `now` is
    /// the caller's clock.
    pub async fn feed(&self, token: &str, hub: &crate::push::Hub, now: impl Fn() -> DateTime<Utc>) {
        let since_now = || now().to_rfc3339_opts(SecondsFormat::Secs, true);
        let mut since = since_now();
        loop {
            tokio::time::sleep(POLL).await;
            if !hub.is_listened_to() {
                since = since_now();
                continue;
            }
            let path = format!("/changes?limit=500&since={since}");
            let request = ApiRequest { method: http::Method::GET, path, body: None, idempotency_key: None };
            let Ok((200, answer)) = self.call(token, request).await else { continue };
            let pushed: Vec<crate::push::Pushed> = answer["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    Some(crate::push::Pushed {
                        event_id: e["id"].as_str()?.to_owned(),
                        account_id: String::new(),
                        watch_id: e["watch_id"].as_str().map(str::to_owned),
                        event_type: e["type"].as_str().or(e["event_type"].as_str()).unwrap_or_default().to_owned(),
                    })
                })
                .collect();
            hub.publish(&pushed).await;
            if let Some(cursor) = answer["next_cursor"].as_str() {
                since = cursor.to_owned();
            }
        }
    }
}

impl Api for HttpApi {
    fn call<'a>(&'a self, token: &'a str, request: ApiRequest) -> BoxFuture<'a, Result<(u16, Value), String>> {
        Box::pin(async move {
            let mut builder =
                self.client.request(request.method, format!("{}/api/v1{}", self.base, request.path)).bearer_auth(token);
            if let Some(key) = &request.idempotency_key {
                builder = builder.header("idempotency-key", key);
            }
            if let Some(body) = &request.body {
                builder = builder.header("content-type", "application/json").body(body.to_string());
            }
            let answer = builder.send().await.map_err(|e| format!("{} unreachable: {e}", self.base))?;
            let status = answer.status().as_u16();
            let bytes = answer.bytes().await.map_err(|e| e.to_string())?;
            Ok((status, crate::answer_body(&bytes)))
        })
    }
}
