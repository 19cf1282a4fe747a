# check-systemd.mk - `make check-systemd`: `systemd-analyze verify` of the units
# in deploy/systemd against a --root tree holding the built binaries where
# the units expect them (tests/check-systemd.sh); `make test` runs it.

.PHONY: check-systemd
check-systemd: $(BINDIR)/vr-worker $(BINDIR)/vr-controller
	$(Q)tests/check-systemd.sh $(BINDIR)
