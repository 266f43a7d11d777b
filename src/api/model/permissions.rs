//! Shapes of AddPermission and RemovePermission.

use serde::Deserialize;

use super::*;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct AddPermissionInput {
    pub queue_url: Option<String>,
    pub label: Option<String>,
    #[serde(rename = "AWSAccountIds")]
    pub aws_account_ids: Option<Vec<String>>,
    pub actions: Option<Vec<String>>,
}

impl Shape for AddPermissionInput {
    const MEMBERS: &'static [Member] = &[
        QUEUE_URL,
        Member::text("Label"),
        Member::renamed("AWSAccountIds", &["AWSAccountId"], TEXT_LIST),
        Member::renamed("Actions", &["ActionName"], TEXT_LIST),
    ];
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct RemovePermissionInput {
    pub queue_url: Option<String>,
    pub label: Option<String>,
}

impl Shape for RemovePermissionInput {
    const MEMBERS: &'static [Member] = &[QUEUE_URL, Member::text("Label")];
}
