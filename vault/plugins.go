package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/margin-md/margin/vault/note"
)

// Where Obsidian keeps the settings margin follows. A plugin's settings
// are followed only while the plugin is on: Obsidian keeps the files of a
// plugin that was turned off, and they go stale.
const (
	coreDailySettings     = ".obsidian/daily-notes.json"
	corePluginsSettings   = ".obsidian/core-plugins.json"
	communityPlugins      = ".obsidian/community-plugins.json"
	periodicNotesSettings = ".obsidian/plugins/periodic-notes/data.json"
	taskNotesSettings     = ".obsidian/plugins/tasknotes/data.json"
)

// readSettings reads the JSON file at the vault path name into into. It
// is false, with no error, for a file that is not there. An empty file
// leaves into as it was: Obsidian writes one for a plugin turned on and
// never set, whose defaults then hold.
func readSettings(dir, name string, into any) (bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil && strings.TrimSpace(string(data)) != "" {
		err = json.Unmarshal(data, into)
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return true, nil
}

// coreDailyOff reports whether core-plugins.json turns the core Daily
// notes plugin off. Obsidian has written it as a list of the plugins that
// are on and, since, as an object of every plugin to on or off; a plugin
// the object does not name keeps its default, which for daily notes is on.
func coreDailyOff(dir string) (bool, error) {
	var raw json.RawMessage
	if ok, err := readSettings(dir, corePluginsSettings, &raw); !ok || len(raw) == 0 {
		return false, err
	}
	var on []string
	if json.Unmarshal(raw, &on) == nil {
		return !slices.Contains(on, "daily-notes"), nil
	}
	var each map[string]bool
	if err := json.Unmarshal(raw, &each); err != nil {
		return false, fmt.Errorf("%s is neither a list of plugins nor an object of plugins to true or false", corePluginsSettings)
	}
	v, named := each["daily-notes"]
	return named && !v, nil
}

// communityPluginOn reports whether the community plugin id is on.
func communityPluginOn(dir, id string) (bool, error) {
	var on []string
	_, err := readSettings(dir, communityPlugins, &on)
	return slices.Contains(on, id), err
}

// dailySettings are what the vault's settings say about its daily notes:
// the settings of the plugin that makes them, or none.
type dailySettings struct {
	Source                   string // the settings file; "" when none places the daily notes
	Folder, Format, Template string
	// Stale is the core plugin's settings when the plugin is off and
	// nothing else makes daily notes: Obsidian no longer reads them, so
	// margin does not either, but notes named by them are worth a word.
	Stale *dailySettings
	// Unread is why the settings that would place the daily notes could
	// not be read; their defaults are used meanwhile.
	Unread error
	// Warnings are the other settings margin could not read.
	Warnings []string
}

// readDailySettings finds the plugin that makes the vault's daily notes,
// as Obsidian decides it: Periodic Notes with its daily notes on serves
// the daily-note command in place of the core plugin; else the core
// Daily notes plugin while it is on.
func readDailySettings(dir string) dailySettings {
	var s dailySettings
	warn := func(err error) {
		if err != nil {
			s.Warnings = append(s.Warnings, err.Error()+"; its settings are not used")
		}
	}
	periodic, err := communityPluginOn(dir, "periodic-notes")
	warn(err)
	if periodic {
		if daily, ok, err := readPeriodicDaily(dir); err != nil {
			s.Unread = err
		} else if ok {
			daily.Source = periodicNotesSettings
			daily.Warnings = s.Warnings
			return daily
		}
	}
	off, err := coreDailyOff(dir)
	warn(err)
	var core struct{ Folder, Format, Template string }
	found, err := readSettings(dir, coreDailySettings, &core)
	switch {
	case err != nil && !off && s.Unread == nil:
		s.Unread = err
		return s
	case err != nil, !found:
		return s
	}
	settings := dailySettings{Source: coreDailySettings, Folder: trimFolder(core.Folder),
		Format: strings.TrimSpace(core.Format), Template: strings.TrimSpace(core.Template)}
	if off {
		s.Stale = &settings
		return s
	}
	settings.Unread, settings.Warnings = s.Unread, s.Warnings
	return settings
}

// readPeriodicDaily reads the daily notes of the Periodic Notes plugin,
// in each shape its versions wrote: {"daily": {...}} (0.x), calendar
// sets (1.x, "day" with "templatePath"), and the first releases' one
// top-level daily setting.
func readPeriodicDaily(dir string) (dailySettings, bool, error) {
	type period struct {
		Enabled                *bool
		Folder, Format         string
		Template, TemplatePath string
	}
	var data struct {
		period
		Daily        *period
		CalendarSets []struct {
			ID  string
			Day *period
		}
		ActiveCalendarSet string
	}
	ok, err := readSettings(dir, periodicNotesSettings, &data)
	if !ok || err != nil {
		return dailySettings{}, false, err
	}
	daily := data.Daily
	for _, set := range data.CalendarSets {
		if set.Day != nil && (set.ID == data.ActiveCalendarSet || daily == nil) {
			daily = set.Day
		}
	}
	if daily == nil {
		// The first releases had daily notes only, always on.
		on := data.Format != "" || data.Folder != "" || data.Template != ""
		daily = &data.period
		daily.Enabled = &on
	}
	if daily.Enabled == nil || !*daily.Enabled {
		return dailySettings{}, false, nil
	}
	template := daily.Template
	if template == "" {
		template = daily.TemplatePath
	}
	return dailySettings{Folder: trimFolder(daily.Folder), Format: strings.TrimSpace(daily.Format), Template: strings.TrimSpace(template)}, true, nil
}

func trimFolder(f string) string { return strings.Trim(strings.TrimSpace(filepath.ToSlash(f)), "/") }

// taskNotes are the TaskNotes plugin's settings that say which notes
// are tasks.
type taskNotes struct {
	Folder   string
	Tag      string
	Property note.TaskProperty
}

// readTaskNotes reads the TaskNotes plugin's settings when it is on.
// Settings it leaves out have TaskNotes' defaults: tasks in
// TaskNotes/Tasks, marked by the tag `task`.
func readTaskNotes(dir string) (taskNotes, bool, error) {
	// A list margin cannot read is reported once, with the daily settings.
	if on, _ := communityPluginOn(dir, "tasknotes"); !on {
		return taskNotes{}, false, nil
	}
	s := struct {
		TasksFolder              *string
		TaskTag                  *string
		TaskIdentificationMethod string
		TaskPropertyName         string
		TaskPropertyValue        string
	}{}
	if _, err := readSettings(dir, taskNotesSettings, &s); err != nil {
		return taskNotes{}, false, err
	}
	tn := taskNotes{Folder: "TaskNotes/Tasks", Tag: "task"}
	if s.TasksFolder != nil {
		tn.Folder = trimFolder(*s.TasksFolder)
	}
	if s.TaskTag != nil {
		tn.Tag = strings.TrimLeft(strings.TrimSpace(*s.TaskTag), "#")
	}
	if s.TaskIdentificationMethod == "property" {
		tn.Tag = ""
		tn.Property = note.TaskProperty{Name: strings.TrimSpace(s.TaskPropertyName), Value: strings.TrimSpace(s.TaskPropertyValue)}
	}
	return tn, true, nil
}
