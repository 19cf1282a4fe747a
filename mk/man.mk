# `make man`: man/vrctl.1 and man/vrctl-CMD.1, one a command, generated
# from vrctl's command table (`vrctl man`), as its help and its shell
# completion (`vrctl completion bash|zsh`) are.
.PHONY: man
man: $(BINDIR)/vrctl
	$(Q)mkdir -p man && $(BINDIR)/vrctl man > man/vrctl.1 && \
	  for c in $$($(BINDIR)/vrctl man --list); do \
	    $(BINDIR)/vrctl man $$c > man/vrctl-$$c.1 || exit 1; done
	@echo "man: man/vrctl.1 and $$(ls man/vrctl-*.1 | wc -l) command pages (man -l man/vrctl.1)"
