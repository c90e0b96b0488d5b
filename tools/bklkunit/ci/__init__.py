# SPDX-License-Identifier: GPL-2.0
"""CI: the GitLab pipeline (ci-config), the results of many jobs as one (merge)
and what every change must pass (`test`, `make test`)."""
