package main

// groundcrew web link: a signed link made by hand, with the key of the
// configuration — how an operator opens the index and the target pages
// when the pages are opened with signed links only (chat carries the links
// of runs and incidents, never one for every page).

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
	"github.com/groundcrew/groundcrew/web"
)

func newWebCmd() *cobra.Command {
	c := &cobra.Command{Use: "web", Short: "Work with the web pages of runs and incidents (signed links)"}
	c.AddCommand(newWebLink())
	return c
}

func newWebLink() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "link [/ | run <id> | incident <id> | target <name>]",
		Short: "Print a signed link to the pages (default: the index, which opens every page)",
		Long: `Print a link to the web pages signed with web.link_key_file, and when it expires.

  groundcrew web link                    the index (/): opens every page — the index,
                                         every run, incident and target page
  groundcrew web link run r-7f3a9k       one run's page (its Markdown and live updates)
  groundcrew web link incident i-3f2a9c  one incident's page
  groundcrew web link target infra-prd   a target's page (with a link that opens every page)

The link lasts web.link_ttl from now, or --ttl when shorter. Anyone who has it can
open what it opens until then, as with a link posted in chat: give the narrowest
one. A run or incident is looked up in the store first (--no-check skips that).
With an authenticating proxy only (no link key) it prints the address: the proxy
lets people in.`,
		Example: `  groundcrew web link --ttl 12h
  groundcrew web link run r-7f3a9k --config /etc/groundcrew/groundcrew.yaml`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			page, err := parseLinkArgs(args)
			if err != nil {
				return err
			}
			if !cfg.Web.Enabled() {
				return fmt.Errorf("web: is not configured in %s: the pages need web.url and web.link_key_file (README \"Web pages\")", cfg.Path)
			}
			if page.kind == "target" {
				if !slices.Contains(cfg.TargetNames(), page.id) {
					return fmt.Errorf("no target %q in %s%s", page.id, cfg.Path, didYouMean(page.id, cfg.TargetNames()))
				}
			}
			links, err := webLinks(cfg, nil)
			if err != nil {
				return err
			}
			ttl := links.TTL()
			if s, _ := cmd.Flags().GetString("ttl"); s != "" {
				d, err := parseTTL(s)
				if err != nil {
					return err
				}
				if d > ttl {
					return fmt.Errorf("--ttl %s is longer than web.link_ttl (%s): links last at most that long", s, web.HumanTTL(ttl))
				}
				ttl = d
			}
			if noCheck, _ := cmd.Flags().GetBool("no-check"); !noCheck && (page.kind == "run" || page.kind == "incident") {
				id, err := lookUpPage(cmd, page)
				if err != nil {
					return err
				}
				page.id = id
			}
			path, scope, opens := page.address()
			exp := time.Now().Add(ttl).Truncate(time.Second)
			link := links.Make(path, scope, exp)
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, link)
			if !links.Signed() {
				fmt.Fprintf(out, "No link key (web.link_key_file): this address is opened through the proxy (web.trusted_header %s), which signs people in.\n", cfg.Web.TrustedHeader)
				return nil
			}
			fmt.Fprintf(out, "Valid until %s (%s); opens %s.\n", exp.UTC().Format("2006-01-02 15:04 UTC"), web.HumanTTL(ttl), opens)
			return nil
		},
	}
	cmd.Flags().String("ttl", "", "how long the link lasts (\"12h\", \"3d\"; default and at most web.link_ttl)")
	cmd.Flags().Bool("no-check", false, "do not look the run or incident up in the store")
	cmd.Flags().String("store", "", "bbolt store file or postgres:// URL to look the run or incident up in (default: from the config)")
	return cmd
}

// linkPage is the page a link is asked for.
type linkPage struct{ kind, id string }

func parseLinkArgs(args []string) (linkPage, error) {
	usage := "usage: groundcrew web link [/ | run <id> | incident <id> | target <name>]"
	switch {
	case len(args) == 0 || len(args) == 1 && args[0] == "/":
		return linkPage{kind: "site"}, nil
	case len(args) == 1:
		switch w := strings.ToLower(args[0]); {
		case strings.HasPrefix(w, "r-"):
			return linkPage{}, fmt.Errorf("%s: say what it is: groundcrew web link run %s", args[0], args[0])
		case strings.HasPrefix(w, "i-"):
			return linkPage{}, fmt.Errorf("%s: say what it is: groundcrew web link incident %s", args[0], args[0])
		case w == "run" || w == "incident" || w == "target":
			return linkPage{}, fmt.Errorf("%s needs its %s: %s", w, map[string]string{"run": "id", "incident": "id", "target": "name"}[w], usage)
		}
		return linkPage{}, fmt.Errorf("%q is not a page%s; %s", args[0], didYouMean(args[0], []string{"run", "incident", "target"}), usage)
	}
	kind := strings.ToLower(args[0])
	id := strings.TrimSpace(args[1])
	switch kind {
	case "run", "incident":
		id = strings.ToLower(id)
		if id == "" || len(id) > 64 || strings.ContainsAny(id, "/?#% ") {
			return linkPage{}, fmt.Errorf("%q is not a %s id", args[1], kind)
		}
	case "target":
		if id == "" {
			return linkPage{}, errors.New("target needs its name; " + usage)
		}
	default:
		return linkPage{}, fmt.Errorf("%q is not a page%s; %s", args[0], didYouMean(args[0], []string{"run", "incident", "target"}), usage)
	}
	return linkPage{kind: kind, id: id}, nil
}

// address is the page's path, the token's scope and what the link opens,
// in words.
func (p linkPage) address() (path, scope, opens string) {
	switch p.kind {
	case "run":
		return "/runs/" + p.id, web.RunScope(p.id), "run " + p.id + "'s page, its Markdown and live updates"
	case "incident":
		return "/incidents/" + p.id, web.IncidentScope(p.id), "incident " + p.id + "'s page, its Markdown and live updates"
	case "target":
		return "/targets/" + url.PathEscape(p.id), web.ScopeSite, "the page of target " + p.id + " and every other page (a target's page needs a link for every page)"
	}
	return "/", web.ScopeSite, "every page: the index, every run, incident and target"
}

// lookUpPage checks that the run or incident is in the store and returns
// its id as stored.
func lookUpPage(cmd *cobra.Command, p linkPage) (string, error) {
	db, closeDB, err := openStore(cmd)
	if err != nil {
		return "", fmt.Errorf("looking %s %s up: %w (--no-check makes the link without looking)", p.kind, p.id, err)
	}
	defer closeDB()
	if p.kind == "run" {
		r, err := db.GetRun(cmd.Context(), p.id)
		if errors.Is(err, chatmodel.ErrNotFound) {
			return "", fmt.Errorf("no run %q in %s (groundcrew runs list)", p.id, db.Path())
		}
		if err != nil {
			return "", err
		}
		return r.ID, nil
	}
	in, err := db.GetIncident(cmd.Context(), p.id)
	if errors.Is(err, incident.ErrNotFound) {
		return "", fmt.Errorf("no incident %q in %s (/runbook incidents all lists them)", p.id, db.Path())
	}
	if err != nil {
		return "", err
	}
	return in.ID, nil
}

// parseTTL reads "12h", "90m" or "3d".
func parseTTL(s string) (time.Duration, error) {
	if v, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 1000 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= time.Minute {
		return d, nil
	}
	return 0, fmt.Errorf("--ttl %q: write hours (\"12h\") or days (\"3d\"), at least 1m", s)
}

func didYouMean(word string, candidates []string) string {
	if s := textmodel.Suggest(word, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}
