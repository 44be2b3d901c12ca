"""Metrics on object storage (moto S3): appends are puts conditional on the ETag (§4.3)."""

from __future__ import annotations

import pytest

import mrecd

W = "2026-08-04T00:00:01+00:00"


def test_metrics_log_flush_and_read_back_on_s3(s3_bucket: str) -> None:
    url = f"{s3_bucket}/lab/fit.mrec"
    with mrecd.create_record(url, status={"state": "running"}) as rec:
        rec.metrics.log(1, loss=1.0, wall_time=W)
        rec.metrics.log(2, loss=0.5, wall_time=W)
        rec.metrics.flush()
        rec.metrics.log(3, loss=0.25, wall_time=W)
    read = mrecd.open_record(url)
    assert read.metrics.series("loss").values == [1.0, 0.5, 0.25]
    assert mrecd.validate_record(url) == []


def test_a_concurrent_put_on_s3_makes_the_appender_lose(s3_bucket: str) -> None:
    url = f"{s3_bucket}/lab/fit.mrec"
    rec = mrecd.create_record(url, status={"state": "running"})
    rec.metrics.log(1, loss=1.0, wall_time=W)
    other = mrecd.open_record(url, "r+")
    other.metrics.log(2, loss=2.0, wall_time=W)  # no lease on object storage: ETags decide
    with pytest.raises(mrecd.WriterBusy, match="another writer changed"):
        rec.metrics.log(3, loss=3.0, wall_time=W)
    other.metrics.release()
    rec.metrics.release()
    assert mrecd.open_record(url).metrics.series("loss").steps == [1, 2]
