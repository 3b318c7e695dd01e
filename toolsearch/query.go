package toolsearch

import (
	"strings"
)

// weightSynonym is the weight of a term a query gains through a synonym,
// relative to a word of the query itself.
const weightSynonym = 0.5

// A queryTerm is a term to look up and how much it counts.
type queryTerm struct {
	term   string
	weight float64
}

// queryTerms returns the terms of query: its own, once each, then their
// synonyms. The query is cut to MaxQueryBytes and MaxQueryTerms words.
func queryTerms(query string) []queryTerm {
	words := appendTerms(nil, cutUTF8(query, MaxQueryBytes), MaxQueryTerms)
	q := make([]queryTerm, 0, 2*len(words))
	seen := make(map[string]int, 2*len(words))
	for _, w := range words {
		if _, ok := seen[w]; !ok {
			seen[w] = len(q)
			q = append(q, queryTerm{w, 1})
		}
	}
	for _, w := range words {
		for _, s := range synonyms[w] {
			if _, ok := seen[s]; !ok {
				seen[s] = len(q)
				q = append(q, queryTerm{s, weightSynonym})
			}
		}
	}
	return q
}

// synonymGroups are words that people use for the same thing when they
// ask for a tool. Each line is a group; every word stands for the others.
// Words are stemmed as the index stems them.
const synonymGroups = `
delete remove erase destroy drop trash purge discard wipe
create make add new insert
find search lookup locate query look seek
get fetch retrieve read show view obtain load display
list enumerate browse
update edit modify change alter patch
send post deliver
message chat dm
email mail inbox
file document doc
folder directory dir
repo repository
pr pull
issue ticket bug
calendar schedule agenda
event meeting appointment
weather forecast temperature rain climate
stock share equity ticker
price quote cost
exchange convert conversion
user account member person
photo image picture
video movie clip
song music track
run execute exec launch
stop halt kill terminate
cancel abort
upload attach
summary summarize
directions route navigate
location place address
database db sql
row record entry
browser web webpage website site page url
screenshot capture
click press tap
type enter fill
comment reply
book reserve reservation booking
flight airline plane
hotel lodging accommodation
restaurant dining eatery
rename move
copy duplicate clone
contact phone
invoice bill
payment pay charge
customer client
order purchase buy
crypto cryptocurrency bitcoin coin
news headline article
task todo
note memo
notify alert notification
metric statistic stat analytics
error exception crash failure
deploy release rollout
container docker
secret password credential
permission access role
time clock
translate translation
compress zip archive
extract unzip unpack
count number total
`

// synonyms maps a term to the other terms of its groups.
var synonyms = func() map[string][]string {
	m := make(map[string][]string)
	for _, line := range strings.Split(synonymGroups, "\n") {
		var terms []string
		for _, w := range strings.Fields(line) {
			if t := term(w); t != "" {
				terms = append(terms, t)
			}
		}
		for _, t := range terms {
			for _, o := range terms {
				if o != t {
					m[t] = append(m[t], o)
				}
			}
		}
	}
	return m
}()
