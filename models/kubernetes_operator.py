"""Kubernetes operators (`k8sop_`): a cluster's operator registered with the account, its
deployment, enabled features and region, and, with the `bindings` feature, its binding: the
endpoint selectors (CEL) that pick its bound endpoints and the client certificate the
server's issuing CA signed from the operator's CSR."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Index, String, Text
from sqlmodel import Field

from tunnelgw.core import timefmt
from tunnelgw.models.base import TIMESTAMP, DescribedResource, id_field
from tunnelgw.models.principal import principal_ref


class KubernetesOperator(DescribedResource, table=True):
    __tablename__ = "kubernetes_operator"
    __table_args__ = (Index("ix_kubernetes_operator_account_id_id", "account_id", "id"),)
    PREFIX: ClassVar[str] = "k8sop"
    PATH: ClassVar[str] = "/kubernetes_operators"
    FIXTURE_SECTION: ClassVar[str | None] = "kubernetes_operators"
    CACHED_RENDERING: ClassVar[bool] = True  # to_api(): the row and base URL only

    updated_at: datetime = Field(default_factory=timefmt.utcnow, sa_type=TIMESTAMP)
    principal_id: str = id_field()  # who registered it (a user or bot user)
    enabled_features: list[str] = Field(default_factory=list, sa_type=JSON)
    region: str = Field(default="global", sa_type=String(16))
    deployment_name: str = Field(default="", sa_type=Text)
    deployment_namespace: str = Field(default="", sa_type=Text)
    deployment_version: str = Field(default="", sa_type=Text)
    deployment_cluster_name: str = Field(default="", sa_type=Text)
    # The binding (null columns: none, the `bindings` feature is off).
    endpoint_selectors: list[str] | None = Field(default=None, sa_type=JSON, nullable=True)
    ingress_endpoint: str | None = Field(default=None, sa_type=Text, nullable=True)
    # The CSR last signed, as sent: a PATCH with the same CSR keeps the certificate.
    binding_csr: str | None = Field(default=None, sa_type=Text, nullable=True)
    cert_pem: str | None = Field(default=None, sa_type=Text, nullable=True)
    cert_not_before: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)
    cert_not_after: datetime | None = Field(default=None, sa_type=TIMESTAMP, nullable=True)

    def to_api(self) -> dict[str, Any]:
        return {
            **self.common_api(),
            "updated_at": self.api_time("updated_at"),
            "principal": principal_ref(self.principal_id),
            "enabled_features": list(self.enabled_features),
            "region": self.region,
            "deployment": {
                "name": self.deployment_name,
                "namespace": self.deployment_namespace,
                "version": self.deployment_version,
                "cluster_name": self.deployment_cluster_name,
            },
            "binding": self.binding_api(),
        }

    def binding_api(self) -> dict[str, Any] | None:
        if self.endpoint_selectors is None:
            return None
        return {
            "endpoint_selectors": list(self.endpoint_selectors),
            "cert": {
                "cert": self.cert_pem or "",
                "not_before": self.api_time("cert_not_before"),
                "not_after": self.api_time("cert_not_after"),
            },
            "ingress_endpoint": self.ingress_endpoint or "",
        }
