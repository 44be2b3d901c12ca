"""deploy/: compose, Kubernetes and systemd files parse, validate, and match what the server reads.

No container runs here (docker is a client without a daemon): the compose
file is checked for structure and against the settings; the Kubernetes
manifests against the API schemas (kubernetes-validate, strict); the nginx
config with crossplane; the systemd unit with ``systemd-analyze verify``.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import crossplane
import kubernetes_validate
import pytest
import yaml

from mrecd.service import Settings, create_app
from mrecd.service.settings import TokenGrant, check_config

DEPLOY = Path(__file__).parents[1] / "deploy"
COMPOSE = DEPLOY / "compose"
KUBE = DEPLOY / "kubernetes"
SYSTEMD = DEPLOY / "systemd"
#: The variables the server reads: one per settings field, and the config file.
SETTINGS_ENV = {f"MRECD_{name.upper()}" for name in Settings.model_fields} | {"MRECD_CONFIG"}
K8S_VERSION = "1.33.0"


def mrecd_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("MRECD_")}


def settings_from(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The settings a server started with ``env`` builds (the real parsing)."""
    for key in list(SETTINGS_ENV):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Settings()


def app_paths() -> set[str]:
    """The paths the service answers (its OpenAPI document)."""
    return set(create_app(Settings()).openapi()["paths"])


def option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


# -- compose ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    return document


def replicas(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = compose["services"]
    return {n: s for n, s in services.items() if s.get("command", [None])[0] == "serve"}


def test_compose_runs_two_replicas_a_proxy_and_an_s3_service(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert len(replicas(compose)) >= 2
    assert services["proxy"]["image"].startswith("nginx:")
    assert services["s3"]["image"].startswith("minio/minio")
    for replica in replicas(compose).values():
        assert (COMPOSE / replica["build"]["context"] / replica["build"]["dockerfile"]).is_file()


def test_compose_replicas_set_only_settings_the_server_reads(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    caches = set()
    for replica in replicas(compose).values():
        env = replica["environment"]
        assert set(mrecd_env(env)) <= SETTINGS_ENV
        argv = replica["command"]
        config = Path(option(argv, "--config"))
        (secret,) = replica["secrets"]
        assert config == Path("/run/secrets") / secret
        secret_file = COMPOSE / compose["secrets"][secret]["file"]
        check_config(secret_file)  # the server's own check: keys and values
        settings = settings_from({**mrecd_env(env), "MRECD_CONFIG": str(secret_file)}, monkeypatch)
        assert settings.store.startswith("s3://") and settings.tokens  # 0.0.0.0 needs tokens
        assert option(argv, "--host") == "0.0.0.0"
        assert option(argv, "--port") in replica["expose"]
        (volume,) = replica["volumes"]
        name, target = volume.split(":")
        assert name in compose["volumes"] and settings.cache_dir is not None
        assert Path(settings.cache_dir).is_relative_to(target)
        caches.add(name)
        probe = " ".join(replica["healthcheck"]["test"])
        assert f"127.0.0.1:{option(argv, '--port')}/readyz" in probe
    assert len(caches) == len(replicas(compose))  # each replica its own cache


def test_compose_replicas_reach_the_s3_service_and_its_bucket(compose: dict[str, Any]) -> None:
    services = compose["services"]
    s3_port = option(services["s3"]["command"], "--address").lstrip(":")
    for replica in replicas(compose).values():
        env = replica["environment"]
        endpoint = urlsplit(env["AWS_ENDPOINT_URL"])
        assert (endpoint.hostname, str(endpoint.port)) == ("s3", s3_port)
        bucket = urlsplit(env["MRECD_STORE"]).netloc
        assert f"mc mb --ignore-existing s3/{bucket}" in services["bucket"]["command"][0]
        assert env["AWS_ACCESS_KEY_ID"] == services["s3"]["environment"]["MINIO_ROOT_USER"]
        assert replica["depends_on"]["bucket"]["condition"] == "service_completed_successfully"


def nginx() -> list[dict[str, Any]]:
    parsed = crossplane.parse(str(COMPOSE / "nginx.conf"), single=True, check_ctx=True)
    assert parsed["errors"] == []
    config: list[dict[str, Any]] = parsed["config"][0]["parsed"]
    return config


def directives(block: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Every directive ``name`` in ``block``, at any depth."""
    found = []
    for entry in block:
        if entry["directive"] == name:
            found.append(entry)
        found.extend(directives(entry.get("block", []), name))
    return found


def test_the_proxy_points_at_every_replica(compose: dict[str, Any]) -> None:
    config = nginx()
    (upstream,) = directives(config, "upstream")
    servers = {d["args"][0] for d in directives(upstream["block"], "server")}
    expected = {f"{name}:{option(s['command'], '--port')}" for name, s in replicas(compose).items()}
    assert servers == expected
    (proxy_pass,) = directives(config, "proxy_pass")
    assert proxy_pass["args"] == [f"http://{upstream['args'][0]}"]
    (listen,) = directives(config, "listen")
    published = {p.split(":")[-1] for p in compose["services"]["proxy"]["ports"]}
    assert listen["args"][0] in published
    mount = compose["services"]["proxy"]["volumes"][0].split(":")
    assert mount[:2] == ["./nginx.conf", "/etc/nginx/nginx.conf"]
    assert directives(config, "proxy_buffering")[0]["args"] == ["off"]  # server-sent events
    (body,) = directives(config, "client_max_body_size")
    assert int(body["args"][0].rstrip("m")) << 20 >= Settings().max_body_bytes
    assert set(compose["services"]["proxy"]["depends_on"]) == set(replicas(compose))


# -- Kubernetes -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kube() -> dict[tuple[str, str], dict[str, Any]]:
    kustomization = yaml.safe_load((KUBE / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    assert listed == {p.name for p in KUBE.glob("*.yaml")} - {"kustomization.yaml"}
    found = {}
    for name in sorted(listed):
        for doc in yaml.safe_load_all((KUBE / name).read_text()):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def test_every_manifest_validates_against_the_kubernetes_schema(
    kube: dict[tuple[str, str], dict[str, Any]],
) -> None:
    for doc in kube.values():
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_a_schema_violation_is_caught() -> None:
    bad = yaml.safe_load((KUBE / "replicas.yaml").read_text().split("---")[0])
    bad["spec"]["replicas"] = "three"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    result: dict[str, Any] = only
    return result


def pod_env(
    deployment: dict[str, Any], kube: dict[tuple[str, str], dict[str, Any]]
) -> dict[str, str]:
    """The variables a pod of ``deployment`` gets: envFrom sources, then env (which wins)."""
    env: dict[str, str] = {}
    for source in container(deployment)["envFrom"]:
        if "configMapRef" in source:
            env.update(kube[("ConfigMap", source["configMapRef"]["name"])]["data"])
        else:
            env.update(kube[("Secret", source["secretRef"]["name"])]["stringData"])
    env.update({e["name"]: e["value"] for e in container(deployment).get("env", [])})
    return env


def test_the_replicas_deployment_probes_and_serves_what_the_server_does(
    kube: dict[tuple[str, str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = kube[("Deployment", "mrecd")]
    assert deployment["spec"]["replicas"] >= 2
    main = container(deployment)
    (port,) = main["ports"]
    assert int(option(main["args"], "--port")) == port["containerPort"]
    assert option(main["args"], "--host") == "0.0.0.0"
    probes = {main["livenessProbe"]["httpGet"]["path"], main["readinessProbe"]["httpGet"]["path"]}
    assert probes == {"/healthz", "/readyz"} and probes <= app_paths()
    for probe in ("livenessProbe", "readinessProbe"):
        assert main[probe]["httpGet"]["port"] == port["name"]
    env = pod_env(deployment, kube)
    assert set(mrecd_env(env)) <= SETTINGS_ENV
    settings = settings_from(mrecd_env(env), monkeypatch)
    assert settings.store.startswith("s3://") and settings.tokens
    assert all(isinstance(t, TokenGrant) for t in settings.tokens)
    mounts = {m["mountPath"] for m in main["volumeMounts"]}
    assert settings.cache_dir in mounts
    service = kube[("Service", "mrecd")]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]


def test_tokens_come_from_the_secret_and_settings_from_the_configmap(
    kube: dict[tuple[str, str], dict[str, Any]],
) -> None:
    secret = kube[("Secret", "mrecd-secrets")]["stringData"]
    grants = [TokenGrant.model_validate(g) for g in json.loads(secret["MRECD_TOKENS"])]
    assert {g.scope for g in grants} >= {"admin", "read"}
    config = kube[("ConfigMap", "mrecd-config")]["data"]
    assert "MRECD_TOKENS" not in config and set(mrecd_env(config)) <= SETTINGS_ENV


def test_the_owner_keeps_live_collections_on_the_claim(
    kube: dict[tuple[str, str], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = kube[("Deployment", "mrecd-owner")]
    assert owner["spec"]["replicas"] == 1 and owner["spec"]["strategy"]["type"] == "Recreate"
    claim = kube[("PersistentVolumeClaim", "mrecd-collections")]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    volumes = {v["name"]: v for v in owner["spec"]["template"]["spec"]["volumes"]}
    (on_claim,) = [
        n for n, v in volumes.items() if v.get("persistentVolumeClaim", {}).get("claimName")
    ]
    assert volumes[on_claim]["persistentVolumeClaim"]["claimName"] == "mrecd-collections"
    mount = {m["name"]: m["mountPath"] for m in container(owner)["volumeMounts"]}[on_claim]
    assert settings_from(mrecd_env(pod_env(owner, kube)), monkeypatch).store == mount
    probes = {container(owner)[p]["httpGet"]["path"] for p in ("livenessProbe", "readinessProbe")}
    assert probes == {"/healthz", "/readyz"}


# -- systemd ----------------------------------------------------------------------------------


def unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """A unit file as ``{section: {key: [values]}}`` (keys repeat, as Environment= does)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key, []).append(value)
    return sections


def test_the_systemd_unit_serves_with_the_settings_the_server_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = unit(SYSTEMD / "mrecd.service")["Service"]
    argv = shlex.split(service["ExecStart"][0])
    assert argv[1] == "serve" and option(argv, "--host") == "127.0.0.1"
    config = Path(option(argv, "--config"))
    assert config.parent == Path("/etc") / service["ConfigurationDirectory"][0]
    check_config(SYSTEMD / config.name)
    env = dict(v.split("=", 1) for v in service["Environment"])
    assert set(mrecd_env(env)) <= SETTINGS_ENV
    settings = settings_from(
        {**mrecd_env(env), "MRECD_CONFIG": str(SYSTEMD / config.name)}, monkeypatch
    )
    assert Path(settings.store).is_relative_to(Path("/var/lib") / service["StateDirectory"][0])
    assert settings.cache_dir == f"/var/cache/{service['CacheDirectory'][0]}"
    assert settings.tokens and service["User"] == ["mrecd"]
    assert unit(SYSTEMD / "mrecd.service")["Install"]["WantedBy"] == ["multi-user.target"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    # verify checks that ExecStart's program exists: point it at this environment's mrecd
    installed = Path(sys.executable).with_name("mrecd")
    text = (SYSTEMD / "mrecd.service").read_text().replace("/opt/mrecd/bin/mrecd", str(installed))
    copy = tmp_path / "mrecd.service"
    copy.write_text(text)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "mrecd.service" not in done.stderr, done.stderr
    copy.write_text(text.replace("Restart=on-failure", "Restart=sometimes"))
    done = subprocess.run(
        ["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, check=False
    )
    assert "restart specifier" in done.stderr  # the check can fail
