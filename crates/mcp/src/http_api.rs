//! The REST API over HTTP, for `driftwatch mcp` on stdio: a local agent's tools call a
//! driftwatch server (`DRIFTWATCH_URL`) with the agent's token, as any API client would.

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
            let body = match bytes.is_empty() {
                true => Value::Null,
                false => serde_json::from_slice(&bytes)
                    .unwrap_or_else(|_| serde_json::json!({"text": String::from_utf8_lossy(&bytes)})),
            };
            Ok((status, body))
        })
    }
}
