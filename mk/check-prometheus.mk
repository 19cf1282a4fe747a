# check-prometheus.mk - `make check-prometheus`: promtool checks the alert
# rules in deploy/prometheus and runs their test cases
# (tests/check-prometheus.sh); `make test` runs it.

.PHONY: check-prometheus
check-prometheus:
	$(Q)tests/check-prometheus.sh
