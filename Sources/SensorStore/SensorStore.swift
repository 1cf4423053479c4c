// The embargo store (DESIGN §7, issue 3). Being built.
