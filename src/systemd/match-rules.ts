// D-Bus match rules for the systemd signals about one unit (D-Bus specification, "Match Rules"): the
// bus delivers only these, so no process decodes signals about other sessions' units. systemd-run
// does the same with one PropertiesChanged match on its unit's path (src/run/run.c).
import { MANAGER_INTERFACE, MANAGER_PATH, SYSTEMD_BUS_NAME } from './dbus-connection.ts';
import { unitObjectPath, validateUnitName } from './unit-names.ts';

/**
 * PropertiesChanged on the unit's object path (its Unit and Service interfaces), and the manager's
 * JobRemoved (u id, o job, s unit, s result) and UnitRemoved (s unit, o path) for this unit alone,
 * matched on their unit-name argument. A validated name holds no quote, so it cannot end the value.
 */
export function unitMatchRules(name: string): string[] {
  validateUnitName(name);
  const systemd = `type='signal',sender='${SYSTEMD_BUS_NAME}'`;
  const manager = `${systemd},path='${MANAGER_PATH}',interface='${MANAGER_INTERFACE}'`;
  return [
    `${systemd},path='${unitObjectPath(name)}',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'`,
    `${manager},member='JobRemoved',arg2='${name}'`,
    `${manager},member='UnitRemoved',arg0='${name}'`,
  ];
}
