package mattermost

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// ReadThread implements chatmodel.ThreadReader: the root post and its replies,
// oldest first, without system messages. Attachment texts (details) are
// appended to their post's text.
func (a *Adapter) ReadThread(ctx context.Context, c chatmodel.Conversation) ([]chatmodel.ThreadMessage, error) {
	if c.Thread == "" {
		return nil, fmt.Errorf("reading mattermost thread: no thread given")
	}
	var list *model.PostList
	err := a.call(ctx, "reading thread "+c.Thread, true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		list, resp, err = a.client.GetPostThread(ctx, c.Thread, "", false)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	posts := make([]*model.Post, 0, len(list.Posts))
	authors := map[string]bool{}
	for _, p := range list.Posts {
		if p.DeleteAt != 0 || strings.HasPrefix(p.Type, model.PostSystemMessagePrefix) {
			continue
		}
		posts = append(posts, p)
		authors[p.UserId] = true
	}
	sort.SliceStable(posts, func(i, j int) bool {
		if posts[i].CreateAt != posts[j].CreateAt {
			return posts[i].CreateAt < posts[j].CreateAt
		}
		return posts[i].Id < posts[j].Id
	})
	ids := make([]string, 0, len(authors))
	for id := range authors {
		ids = append(ids, id)
	}
	users, err := a.lookupUsers(ctx, ids)
	if err != nil {
		a.log.Warn("could not look up thread authors", "thread", c.Thread, "err", err)
	}
	botID := a.BotUserID()
	out := make([]chatmodel.ThreadMessage, 0, len(posts))
	for _, p := range posts {
		u := users[p.UserId]
		text := p.Message
		for _, att := range p.Attachments() {
			if att.Text != "" {
				text += "\n" + att.Text
			}
		}
		out = append(out, chatmodel.ThreadMessage{
			Time:   time.UnixMilli(p.CreateAt),
			Author: chatmodel.User{ID: p.UserId, Name: u.name},
			Text:   text,
			Bot:    p.UserId == botID || u.bot || p.GetProp(model.PostPropsFromBot) == "true",
		})
	}
	return out, nil
}
